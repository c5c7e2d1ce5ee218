package artifact

import "encoding/json"

// Artifact types of SPEC §10.6.
const (
	TypeEmbeddingShard      = "retrieval_embedding_shard"
	TypeEmbedding           = "retrieval_embedding"
	TypeRelevance           = "retrieval_relevance"
	TypeCompressedEmbedding = "retrieval_compressed_embedding"
	TypeCompression         = "retrieval_compression"
	TypeEvaluation          = "retrieval_evaluation"
	TypeFittedState         = "retrieval_fitted_state"
	// TypeExclusions is a separate exclusions artifact (SPEC §10.6).
	TypeExclusions = "retrieval_exclusions"
	// TypeReport is a reconstruction stored at from-artifacts --output-key.
	TypeReport = "retrieval_report"
)

// Cache statuses (SPEC §9.5).
const (
	CacheHit      = "hit"
	CacheMiss     = "miss"
	CacheDisabled = "disabled"
	CacheBypassed = "bypassed_unsafe_identity"
)

// WeakestStatus is the status a derived artifact inherits from its sources
// (SPEC §9.5): any bypassed source makes it bypassed, then disabled, then
// miss; only all-hit sources give hit.
func WeakestStatus(statuses ...string) string {
	rank := map[string]int{CacheBypassed: 0, CacheDisabled: 1, CacheMiss: 2, CacheHit: 3}
	out := CacheHit
	for _, s := range statuses {
		if r, ok := rank[s]; ok && r < rank[out] {
			out = s
		}
	}
	return out
}

// Common fields of every metadata document.
type Common struct {
	ArtifactType     string `json:"artifact_type"`
	VertebraeVersion string `json:"vertebrae_version"`
	OutputKey        string `json:"output_key"`
}

// ArrayInfo are the fields every array artifact's metadata carries.
type ArrayInfo struct {
	Shape        []int  `json:"shape"`
	DType        string `json:"dtype"`
	Sparse       bool   `json:"sparse"`
	NNZ          *int64 `json:"nnz"`
	NSamples     int    `json:"n_samples"`
	EmbeddingDim int    `json:"embedding_dim"`
}

// EndpointIdentity are the identity fields of an endpoint (and of its
// shards and compressed forms).
type EndpointIdentity struct {
	DatasetIdentityKey string         `json:"dataset_identity_key"`
	ExtractorRecipe    map[string]any `json:"extractor_recipe"`
	RecipeHash         string         `json:"recipe_hash"`
	Side               string         `json:"side"`
	Branch             string         `json:"branch"`
	Modality           string         `json:"modality"`
	IDsSHA256          string         `json:"ids_sha256"`
	CacheEligible      bool           `json:"cache_eligible"`
	CacheStatus        string         `json:"cache_status"`
}

// ShardInfo locates an extraction shard.
type ShardInfo struct {
	TotalShards int `json:"total_shards"`
	ShardIndex  int `json:"shard_index"`
}

// EmbeddingShard is retrieval_embedding_shard: rows i, i+N, … of an
// endpoint, in order (SPEC §11.2).
type EmbeddingShard struct {
	Common
	ArrayInfo
	EndpointIdentity
	Shard        ShardInfo `json:"shard"`
	EndpointRows int       `json:"endpoint_rows"`
	BatchSize    int       `json:"batch_size"`
}

// Embedding is retrieval_embedding, a merged (or directly written)
// endpoint.
type Embedding struct {
	Common
	ArrayInfo
	EndpointIdentity
	ShardKeys []string `json:"shard_keys"`
	NShards   int      `json:"n_shards"`
}

// CompressedEmbedding is retrieval_compressed_embedding: the source
// endpoint's fields plus the compression run it belongs to.
type CompressedEmbedding struct {
	Common
	ArrayInfo
	EndpointIdentity
	ShardKeys         []string       `json:"shard_keys"`
	NShards           int            `json:"n_shards"`
	SourceKey         string         `json:"source_key"`
	CompressionPrefix string         `json:"compression_prefix"`
	Compression       map[string]any `json:"compression"`
}

// Compression is retrieval_compression, the JSON summary at a compression
// prefix.
type Compression struct {
	Common
	QueryEmbeddingKey   string         `json:"query_embedding_key"`
	GalleryEmbeddingKey string         `json:"gallery_embedding_key"`
	QueryOutputKey      string         `json:"query_output_key"`
	GalleryOutputKey    string         `json:"gallery_output_key"`
	CompressionMetadata map[string]any `json:"compression_metadata"`
	CacheEligible       bool           `json:"cache_eligible"`
	CacheStatus         string         `json:"cache_status"`
}

// Relevance is retrieval_relevance. It holds exactly one of Relevance and
// RelevanceLabels (SPEC §10.6). Relevance maps query index (decimal string)
// → gallery index → grade > 0, before exclusions, for explicit relevance;
// RelevanceLabels is the label form of label-derived relevance (§2.7), one
// label per query and per gallery row. DatasetIdentity (the §2.11 identity
// object) is an addition so reconstructions can report the dataset's
// identity in full.
type Relevance struct {
	Common
	QueryIDs            []string                      `json:"query_ids"`
	GalleryIDs          []string                      `json:"gallery_ids"`
	NQueries            int                           `json:"n_queries"`
	NGallery            int                           `json:"n_gallery"`
	Relevance           map[string]map[string]float64 `json:"relevance,omitempty"`
	RelevanceLabels     *RelevanceLabels              `json:"relevance_labels,omitempty"`
	Exclusions          [][2]int                      `json:"exclusions"`
	DatasetIdentityKey  string                        `json:"dataset_identity_key"`
	ProtocolFingerprint string                        `json:"protocol_fingerprint"`
	DatasetIdentity     map[string]any                `json:"dataset_identity"`
	QueryModality       string                        `json:"query_modality"`
	GalleryModality     string                        `json:"gallery_modality"`
}

// RelevanceLabels is the label form of a relevance artifact: the label of
// every query and gallery row, in row order (SPEC §10.6).
type RelevanceLabels struct {
	Query   []string `json:"query"`
	Gallery []string `json:"gallery"`
}

// Exclusions is a separate exclusions artifact overriding a relevance
// document's exclusions (SPEC §10.6).
type Exclusions struct {
	Common
	Exclusions [][2]int `json:"exclusions"`
}

// Evaluation is retrieval_evaluation, the score artifact. Forward and
// Reverse are §5.1 score results. CompressionMetadata and PerQuery are
// additions: the §8.4 metadata of the scored pair (for the §5.2 result) and
// every query's metrics (for the CSV export of a reconstruction).
type Evaluation struct {
	Common
	QueryEmbeddingKey     string          `json:"query_embedding_key"`
	GalleryEmbeddingKey   string          `json:"gallery_embedding_key"`
	RelevanceKey          string          `json:"relevance_key"`
	ExclusionsKey         *string         `json:"exclusions_key"`
	Forward               json.RawMessage `json:"forward"`
	Reverse               json.RawMessage `json:"reverse"`
	PrimaryScore          float64         `json:"primary_score"`
	QueryEndpoint         map[string]any  `json:"query_endpoint"`
	GalleryEndpoint       map[string]any  `json:"gallery_endpoint"`
	RetrievalConfig       map[string]any  `json:"retrieval_config"`
	ProtocolFingerprint   string          `json:"protocol_fingerprint"`
	EvaluationFingerprint string          `json:"evaluation_fingerprint"`
	CacheEligible         bool            `json:"cache_eligible"`
	CacheStatus           string          `json:"cache_status"`
	CompressionMetadata   map[string]any  `json:"compression_metadata"`
	PerQuery              PerQuery        `json:"per_query"`
}

// PerQuery holds every query's metrics per direction ({"query_id", metric
// keys…} rows, query order); Reverse is null when not bidirectional.
type PerQuery struct {
	Forward json.RawMessage `json:"forward"`
	Reverse json.RawMessage `json:"reverse"`
}

// FittedState is retrieval_fitted_state.
type FittedState struct {
	Common
	DatasetIdentityKey string `json:"dataset_identity_key"`
	RecipeHash         string `json:"recipe_hash"`
	FitSide            string `json:"fit_side"`
	StateBase64        string `json:"state_base64"`
}
