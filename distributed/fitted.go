package distributed

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// fitter reports whether x needs a fit on the gallery: a same-modality
// Fitter, except an extract.Func without a fit function (its Fit is a
// no-op, so there is no state to ship).
func fitter(x extract.Extractor, entry extract.Entry) (extract.Fitter, bool) {
	if entry.QueryBranch != "" { // branch encoders are never fitted (SPEC §11.2)
		return nil, false
	}
	if fn, ok := x.(*extract.Func); ok && fn.FitFunc == nil {
		return nil, false
	}
	f, ok := x.(extract.Fitter)
	return f, ok
}

// fitOnce fits a StatefulFitter on the gallery and stores its state at
// artifact.FittedKey (SPEC §11.2: workers never fit; they load this
// state). It returns the state's key.
func fitOnce(ctx context.Context, st *artifact.Store, ds *retrieval.Dataset, name string, f extract.StatefulFitter, datasetKey, recipeHash string) (string, error) {
	if err := f.Fit(ctx, ds.Gallery()); err != nil {
		return "", fmt.Errorf("Extractor %s: fit on the gallery: %w", name, err)
	}
	state, err := f.MarshalState()
	if err != nil {
		return "", fmt.Errorf("Extractor %s: cannot serialise the fitted state: %w", name, err)
	}
	key := artifact.FittedKey(datasetKey, recipeHash)
	doc := &artifact.FittedState{
		Common:             artifact.Common{ArtifactType: artifact.TypeFittedState, VertebraeVersion: version.Version, OutputKey: key},
		DatasetIdentityKey: datasetKey, RecipeHash: recipeHash, FitSide: "gallery",
		StateBase64: base64.StdEncoding.EncodeToString(state),
	}
	if err := st.WriteJSON(ctx, key, doc); err != nil {
		return "", err
	}
	return key, nil
}

// LoadState gives a worker's extractor the fitted state its plan recorded
// (SPEC §11.2), before Encode; it does nothing for extractors without one.
// The state must belong to the planned dataset and recipe.
func LoadState(ctx context.Context, st *artifact.Store, pe *Extractor, x extract.Extractor) error {
	if pe.FittedStateKey == nil {
		return nil
	}
	f, ok := x.(extract.StatefulFitter)
	if !ok {
		return fmt.Errorf("Extractor %s: the plan has fitted state %s but the extractor cannot load it", pe.Name, *pe.FittedStateKey)
	}
	key := *pe.FittedStateKey
	doc := &artifact.FittedState{}
	if _, err := st.ReadJSON(ctx, key, doc); err != nil {
		return err
	}
	if doc.ArtifactType != artifact.TypeFittedState || doc.DatasetIdentityKey != pe.DatasetIdentityKey || doc.RecipeHash != pe.RecipeHash || doc.FitSide != "gallery" {
		return &artifact.Error{Key: key, Msg: fmt.Sprintf("is not the fitted state of extractor %s (dataset %s, recipe %s)", pe.Name, pe.DatasetIdentityKey, pe.RecipeHash), Err: artifact.ErrCheck}
	}
	state, err := base64.StdEncoding.DecodeString(doc.StateBase64)
	if err != nil {
		return &artifact.Error{Key: key, Msg: "state_base64 is not base64", Err: artifact.ErrInvalidMetadata}
	}
	if err := f.UnmarshalState(state); err != nil {
		return fmt.Errorf("Extractor %s: fitted state %s: %w", pe.Name, key, err)
	}
	return nil
}
