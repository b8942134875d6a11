"""CDS Hooks: the EHR tells Provenote that a discharge is under way (``encounter-discharge``),
and Provenote answers at once with a card, drafting in the background."""
