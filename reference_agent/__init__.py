"""refagent: a small coding agent that keeps the interruption contract.

Layout: ``log`` writes and loads the session log; ``state`` turns events into the session
and its model-visible history (with in-memory repair); ``tools`` runs bash and kills its
tree; ``adapters`` stream from a model; ``engine`` runs turns and settles them; ``api`` opens
and resumes sessions; ``cli`` and ``chat`` are the commands; ``failpoints`` lists the
deliberate breaks used to test the harness.
"""
