"""Flags: one canonical form for every spelling of a server argument, and which need evidence.

* :mod:`provenance.flags.model` — ``Flag``, ``FlagSet``, ``FlagClass``.
* :mod:`provenance.flags.normalise` — ``normalise_argv``, ``normalise_mapping``,
  ``render_argv`` (argv, srt-slurm mappings, env → ``FlagSet`` and back).
* :mod:`provenance.flags.policy` — ``Policy``, ``default_policy``, ``load_policy``.
* :mod:`provenance.flags.show` — what ``provenance flags`` prints.

See ``docs/flags.md``.
"""
