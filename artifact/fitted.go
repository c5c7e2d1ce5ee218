package artifact

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/internal/version"
)

// WriteFittedState commits an extractor's fitted state (StatefulFitter,
// fitted once on the gallery) as retrieval_fitted_state at
// FittedKey(datasetKey, recipeHash) and returns that key (SPEC §10.4,
// §10.6, §11.2). The same state rewrites the same bytes.
func (s *Store) WriteFittedState(ctx context.Context, datasetKey, recipeHash string, state []byte) (string, error) {
	if datasetKey == "" || recipeHash == "" {
		return "", fmt.Errorf("fitted state needs a dataset identity key and a recipe hash")
	}
	key := FittedKey(datasetKey, recipeHash)
	doc := &FittedState{Common: Common{ArtifactType: TypeFittedState, VertebraeVersion: version.Version, OutputKey: key},
		DatasetIdentityKey: datasetKey, RecipeHash: recipeHash, FitSide: "gallery", StateBase64: base64.StdEncoding.EncodeToString(state)}
	return key, s.WriteJSON(ctx, key, doc)
}

// ReadFittedState reads and checks the fitted state at key: it must be a
// retrieval_fitted_state of the given dataset identity and recipe hash,
// fitted on the gallery.
func (s *Store) ReadFittedState(ctx context.Context, key, datasetKey, recipeHash string) ([]byte, error) {
	var doc FittedState
	if _, err := s.ReadJSON(ctx, key, &doc); err != nil {
		return nil, err
	}
	switch {
	case doc.ArtifactType != TypeFittedState:
		return nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("artifact_type %q is not %s", doc.ArtifactType, TypeFittedState))
	case doc.DatasetIdentityKey != datasetKey || doc.RecipeHash != recipeHash:
		return nil, checkErr(key, fmt.Sprintf("fitted state belongs to dataset identity %q and recipe %q, not %q and %q", doc.DatasetIdentityKey, doc.RecipeHash, datasetKey, recipeHash))
	case doc.FitSide != "gallery":
		return nil, checkErr(key, fmt.Sprintf("fitted state has fit_side %q; extractors are fitted on the gallery", doc.FitSide))
	}
	state, err := base64.StdEncoding.DecodeString(doc.StateBase64)
	if err != nil {
		return nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("state_base64: %v", err))
	}
	return state, nil
}
