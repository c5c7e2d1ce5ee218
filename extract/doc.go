// Package extract defines the extractor model of SPEC §9, the step that
// turns a loaded dataset's endpoints into embedding matrices for ranking:
// frozen backbones that map endpoint inputs to embedding matrices, either
// one function for both endpoints (Encoder) or named branches for
// asymmetric and cross-modal models (BranchEncoder). Encode runs the §9.2
// flow for one extractor — branch resolution, modality checks, an
// unsupervised fit on the gallery only, then the query endpoint and the
// gallery endpoint in batches through the memory-bounded pipeline of
// package memory/admit.
package extract
