"""``driftcheck server``: the language server (the ``server`` extra; from a driftcheck checkout:
``pip install -e '.[server]'``).

- :mod:`.command` the click command; :mod:`.server` the protocol (pygls): handlers, the
  engine thread, debouncing, guarded handlers;
- :mod:`.session` the engine side: projects and each open document's judgement;
- :mod:`.live` one project kept in memory, judging buffers against the saved tree;
- :mod:`.diagnostics`, :mod:`.actions`, :mod:`.hover`: what the client is shown;
- :mod:`.positions` positions in the client's units and edits between texts;
- :mod:`.settings` the client's settings.
"""
