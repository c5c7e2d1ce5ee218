package pretrained

import (
	"context"
	"path/filepath"
)

// FioriDocs is the name of the text demo's data directory.
const FioriDocs = "fiori-docs"

// fioriDocs copies the 778 real SAP Fiori documentation chunks of
// @sap-ux/fiori-docs-embeddings with the all-MiniLM-L6-v2 vectors the
// package ships (embeddings.bin: 778 × 384 float32, little-endian, in
// records.jsonl order). It is data, not a model: the text demo reads it
// (package demo/textdemo).
var fioriDocs = Preparer{
	Name:         FioriDocs,
	Package:      "@sap-ux/fiori-docs-embeddings@1.2.6",
	Integrity:    "sha512-WzpLG3fyszNQe0xqH4oIUhdUPxfRjlbTSxJmsRabYiudctj1/M67Nsy8REC0DOO20DE2+/u8opO1ZLXdIWsfBA==",
	Licence:      "Apache-2.0",
	LicenceFiles: []string{"LICENSE"},
	About:        "778 SAP Fiori documentation chunks (records.jsonl) with their all-MiniLM-L6-v2 embeddings (384-d, computed by the package authors)",
	Build: func(ctx context.Context, src, dst string) error {
		for _, f := range []string{"records.jsonl", "embeddings.bin", "metadata.json"} {
			if err := copyFile(filepath.Join(src, "data", "embeddings", f), filepath.Join(dst, f)); err != nil {
				return err
			}
		}
		return nil
	},
}
