package artifact

import (
	"fmt"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
)

// Side names of an endpoint (SPEC §2.1).
const (
	SideQuery   = "query"
	SideGallery = "gallery"
)

// ValidateKey applies the key rules of SPEC §10.4. A bad key is rejected,
// never rewritten: the error (an *Error wrapping ErrInvalidKey) says
// "invalid artifact key" and why.
func ValidateKey(key string) error {
	reason := ""
	switch {
	case key == "":
		reason = "empty"
	case strings.HasPrefix(key, "/"):
		reason = "starts with /"
	case strings.Contains(key, `\`):
		reason = `contains \`
	}
	if reason == "" {
		for _, r := range key {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				reason = "contains a control character"
				break
			}
		}
	}
	if reason == "" {
		for _, c := range strings.Split(key, "/") {
			switch c {
			case "":
				reason = "has an empty component"
			case ".", "..":
				reason = fmt.Sprintf("has a component %q", c)
			}
			if reason != "" {
				break
			}
		}
	}
	if reason == "" {
		return nil
	}
	return &Error{Key: key, Msg: "invalid artifact key (" + reason + ")", Err: ErrInvalidKey}
}

// EndpointKey is the canonical key of an endpoint embedding (SPEC §10.4):
// retrieval/embeddings/<dataset key>/<recipe hash>/<side>/<branch key>.
func EndpointKey(datasetKey, recipeHash, side, branchKey string) string {
	return "retrieval/embeddings/" + datasetKey + "/" + recipeHash + "/" + side + "/" + branchKey
}

// ShardKey is the key of extraction shard i (0-based) of n below an
// endpoint key.
func ShardKey(endpointKey string, i, n int) string {
	return fmt.Sprintf("%s/shards/%05d-of-%05d", endpointKey, i, n)
}

// RunScopedKey places a canonical key under runs/<uuid>/ (one uuid per plan),
// the only place non-cache-eligible extractors may write (SPEC §9.5).
func RunScopedKey(uuid32hex, canonicalKey string) string {
	return "runs/" + uuid32hex + "/" + canonicalKey
}

// RelevanceKey is retrieval/relevance/<dataset key>.
func RelevanceKey(datasetKey string) string { return "retrieval/relevance/" + datasetKey }

// FittedKey is retrieval/fitted/<dataset key>/<recipe hash>.
func FittedKey(datasetKey, recipeHash string) string {
	return "retrieval/fitted/" + datasetKey + "/" + recipeHash
}

// CompressionPrefix is the key of a paired compression of the endpoints q
// and g under a compression recipe hash (SPEC §10.4); the compressed
// endpoints are its children /query and /gallery.
func CompressionPrefix(queryKey, galleryKey, compressionRecipeHash string) (string, error) {
	h, err := canonjson.Hash(map[string]any{"identity_schema": 2, "query": queryKey, "gallery": galleryKey})
	if err != nil {
		return "", err
	}
	return "retrieval/compressions/" + h + "/" + compressionRecipeHash, nil
}

// ScoreKey is retrieval/scores/v2-<evaluation fingerprint>.
func ScoreKey(evaluationFingerprint string) string {
	return "retrieval/scores/v2-" + evaluationFingerprint
}

// PartialKey is the key of gallery-shard partial i of n below a score key.
func PartialKey(scoreKey string, i, n int) string {
	return fmt.Sprintf("%s/partials/%05d-of-%05d", scoreKey, i, n)
}

// BranchKey is "default" in same-modality mode, else H({"branch": name})
// (SPEC §10.2).
func BranchKey(branch string) (string, error) {
	if branch == "" {
		return "default", nil
	}
	return canonjson.Hash(map[string]any{"branch": branch})
}

// RecipeHash is H({"identity_schema": 2, "recipe": recipe}) (SPEC §10.2).
func RecipeHash(recipe map[string]any) (string, error) {
	return canonjson.Hash(map[string]any{"identity_schema": 2, "recipe": recipe})
}

// CompressionRecipeHash is H({"identity_schema": 2, "compression_config":
// config}) (SPEC §10.2); config is the compression config's AsMap.
func CompressionRecipeHash(config map[string]any) (string, error) {
	return canonjson.Hash(map[string]any{"identity_schema": 2, "compression_config": config})
}

// EvaluationFingerprint is the evaluation fingerprint of SPEC §10.3;
// exclusionsKey "" is null. retrievalConfig is the config's full AsMap.
func EvaluationFingerprint(queryKey, galleryKey, relevanceKey, exclusionsKey string, retrievalConfig map[string]any) (string, error) {
	var ex any
	if exclusionsKey != "" {
		ex = exclusionsKey
	}
	return canonjson.Hash(map[string]any{
		"identity_schema":       2,
		"query_embedding_key":   queryKey,
		"gallery_embedding_key": galleryKey,
		"relevance_key":         relevanceKey,
		"exclusions_key":        ex,
		"retrieval_config":      retrievalConfig,
	})
}
