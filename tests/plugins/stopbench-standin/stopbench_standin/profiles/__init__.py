"""Profiles this plug-in adds to stopbench's built-in ones (entry-point group ``stopbench.profiles``)."""
