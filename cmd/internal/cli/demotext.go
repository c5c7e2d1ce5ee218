package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/demo/textdemo"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// ModelsDirEnv is the default of --models: the directory written by
// `vertebrae models prepare`.
const ModelsDirEnv = "VERTEBRAE_MODELS_DIR"

type textDemoFlags struct {
	enabled bool
	models  string
	task    string
}

func (f *textDemoFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.enabled, "text", false, "run the real text retrieval demo instead (SAP Fiori docs; MiniLM, USE-lite, GloVe, TF-IDF); needs --models")
	cmd.Flags().StringVar(&f.task, "task", textdemo.TaskSameFile, "text demo task: same-file (chunks against chunks, relevance = same source file) or titles (chunk titles against title-less bodies)")
	cmd.Flags().StringVar(&f.models, "models", "", "models `DIR` written by vertebrae models prepare (default $"+ModelsDirEnv+")")
}

// runTextDemo is `vertebrae demo --text`.
func runTextDemo(cmd *cobra.Command, f textDemoFlags, onnxLib string, threads int, out outputFlags, withONNX bool, stdout, stderr io.Writer) error {
	if f.task != textdemo.TaskSameFile && f.task != textdemo.TaskTitles {
		return usagef("--task must be %s or %s, got %q", textdemo.TaskSameFile, textdemo.TaskTitles, f.task)
	}
	if withONNX {
		return usagef("--text and --onnx cannot be combined (the text demo always runs USE-lite on ONNX Runtime)")
	}
	dir := f.models
	if dir == "" {
		dir = os.Getenv(ModelsDirEnv)
	}
	if dir == "" {
		return usagef("demo --text needs the prepared models: pass --models DIR or set $%s (see `vertebrae models prepare --help`)", ModelsDirEnv)
	}
	corpus, err := textdemo.LoadCorpus(dir)
	if err != nil {
		return err
	}
	ds, err := corpus.Dataset()
	if f.task == textdemo.TaskTitles {
		ds, err = corpus.TitleDataset()
	}
	if err != nil {
		return err
	}
	backbones, closeFn, err := textdemo.Backbones(cmd.Context(), dir, corpus, f.task, textdemo.Options{Runtime: onnx.Runtime{Library: onnxLib}})
	if err != nil {
		return err
	}
	defer closeFn()
	ctx := cmd.Context()
	if !out.quiet {
		ctx = withProgress(ctx, stderr) // model encoding takes minutes (progress.go)
	}
	b, err := evaluate.Run(ctx, ds, retrieval.DefaultConfig(), backbones, evaluate.Options{Threads: threads, RunDepth: -1})
	if err != nil {
		return err
	}
	return out.emit(cmd.Context(), b, ds, stdout, stderr)
}
