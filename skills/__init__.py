"""The skills: one module per state's skill, all the same shape (Input, Output,
handler), answering with the ``{s, d, e, rb}`` envelope.

The seven skill modules sit at the top (``parse_claim``, ``evidence_query_plan``,
``tool_request_compose``, ``retrieve``, ``evidence_extract``, ``stance_judge``,
``verdict_aggregate``) beside their shared base, context and envelope; the judge's
machinery is in ``skills.stance``, claim analysis in ``skills.analysis``, the evidence
tools and their runtime in ``skills.tools``. Skills are pure given their input and the
injected clock/id source; this package never imports ``fsm`` or ``state``.
"""
