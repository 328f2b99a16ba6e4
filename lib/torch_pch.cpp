// Carrier for the shared precompiled header; holds no code.
