package distributed

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParsePlan: ParsePlan never panics, and a plan it accepts survives a
// marshal/parse round trip unchanged (the plan file is the only input
// workers share, SPEC §11.2).
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(`{"plan_version":1,"spec":"/r/run.yaml","run_id":"ab","total_shards":2,"dataset_identity_key":"d","relevance_key":"retrieval/relevance/d",` +
		`"extractors":[{"name":"t","extractor_type":"precomputed","dataset_identity_key":"d","recipe_hash":"h","fitted_state_key":null,` +
		`"endpoints":[{"side":"query","branch":"","modality":"embeddings","n_samples":3,"output_key":"k","cache_eligible":true,"cache_status":"miss",` +
		`"shards":[{"shard_index":0,"total_shards":2,"output_key":"k/shards/00000-of-00002","batch_size":128}]}]}]}`))
	f.Add([]byte(`{"plan_version":2}`))
	f.Add([]byte(`{"plan_version":1,"extra":true}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan("plan.json", data)
		if err != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal accepted plan: %v", err)
		}
		q, err := ParsePlan("again.json", out)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, q)
		}
	})
}
