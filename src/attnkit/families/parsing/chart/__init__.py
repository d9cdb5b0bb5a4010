"""The self-attentive chart parser (Kitaev & Klein 2018): span charts and CKY (`cky`), its codec
(`codec`), model (`model`), training task (`task`) and parsing (`infer`)."""
