"""A stopbench plug-in for the stand-in agent: its reader and its profile."""
