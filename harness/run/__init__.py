"""The run wing: from a plan of work items to results on disk. Everything that executes a
task run lives here (planning, scheduling, the task run and its steps, observing and measuring
it, the run folder and the run session); the report only reads what this writes."""
