package cli

import "github.com/vertebrae-eval/vertebrae/runspec"

// specInputs lists the files a run file reads, so no output may overwrite
// one of them (SPEC §6.1).
func specInputs(spec *runspec.Spec) []string {
	d := spec.Dataset
	in := []string{spec.Path, d.Queries.Path, d.Queries.IDs, d.Gallery.Path, d.Gallery.IDs, d.Exclusions}
	if d.Qrels != nil {
		in = append(in, d.Qrels.Path)
	}
	if d.Labels != nil {
		in = append(in, d.Labels.Queries, d.Labels.Gallery)
	}
	for i := range spec.Extractors {
		e := &spec.Extractors[i]
		if e.Type == runspec.TypePrecomputed {
			in = append(in, e.Str("queries"), e.Str("gallery"))
		}
	}
	return in
}
