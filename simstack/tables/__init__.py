"""Records of a run and the tables and statistics made from them."""
