"""Help for small models, behind one policy (`policy.SmallModelAids`): the checklist after the
transcript, the completion pass, and citation grounding, which repairs a parsed draft."""
