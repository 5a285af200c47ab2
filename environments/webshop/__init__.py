"""WebShop (Yao et al. 2022): search a catalogue, open items, choose options and buy what the instruction asks."""
