package deploytest

// The model of the deployment files shared by the checks (deploy_test.go)
// and the simulated job array (jobarray_test.go): the stages, their
// scripts, and the vertebrae command lines in them.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// wantStages is the stage order of SPEC §11.4 (plan → embed shards → merge
// → positives stages → score shards → finalize → from-artifacts). Stages of
// one group run side by side; sharded is the parameter holding the stage's
// shard count. The positives stage (score --stage positives, one task per
// score shard) lets every score shard read only its own gallery rows.
var wantStages = []struct {
	group   int
	name    string
	sharded string // "" for a single-task stage
	cmds    []string
}{
	{10, "plan", "", []string{"plan", "write-relevance"}},
	{20, "embed-gallery", "VERTEBRAE_EMBED_SHARDS", []string{"embed-shard"}},
	{20, "embed-query", "VERTEBRAE_EMBED_SHARDS", []string{"embed-shard"}},
	{30, "merge", "", []string{"merge", "merge"}},
	{35, "positives", "VERTEBRAE_SCORE_SHARDS", []string{"score"}},
	{40, "score", "VERTEBRAE_SCORE_SHARDS", []string{"score"}},
	{50, "finalize", "", []string{"score"}},
	{60, "report", "", []string{"from-artifacts"}},
}

// keysEnvVars are the variables the plan stage writes to keys.env.
var keysEnvVars = []string{"QUERY_KEY", "GALLERY_KEY", "RELEVANCE_KEY"}

// files is the deployment folder: path relative to deploy/ → content.
type files map[string]string

func readDeploy() (files, error) {
	fs := files{}
	for _, pattern := range []string{"k8s/*.yaml", "k8s/*.sh", "slurm/*", "Dockerfile"} {
		names, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			data, err := os.ReadFile(n)
			if err != nil {
				return nil, err
			}
			fs[filepath.ToSlash(n)] = string(data)
		}
	}
	return fs, nil
}

// ---- Kubernetes objects (only the fields the deployment uses; an unknown
// or misspelt field fails the decode) ----

type meta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type ref struct {
	Name string `yaml:"name"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	EnvFrom []struct {
		ConfigMapRef *ref `yaml:"configMapRef"`
		SecretRef    *ref `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type failureRule struct {
	Action      string `yaml:"action"`
	OnExitCodes *struct {
		ContainerName string `yaml:"containerName"`
		Operator      string `yaml:"operator"`
		Values        []int  `yaml:"values"`
	} `yaml:"onExitCodes"`
	OnPodConditions []struct {
		Type string `yaml:"type"`
	} `yaml:"onPodConditions"`
}

type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
	Spec       struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          *int   `yaml:"completions"`
		Parallelism          *int   `yaml:"parallelism"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		PodFailurePolicy     *struct {
			Rules []failureRule `yaml:"rules"`
		} `yaml:"podFailurePolicy"`
		TTLSecondsAfterFinished *int `yaml:"ttlSecondsAfterFinished"`
		Template                struct {
			Metadata meta `yaml:"metadata"`
			Spec     struct {
				RestartPolicy   string `yaml:"restartPolicy"`
				SecurityContext struct {
					RunAsNonRoot bool `yaml:"runAsNonRoot"`
					RunAsUser    int  `yaml:"runAsUser"`
					FSGroup      int  `yaml:"fsGroup"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name                  string `yaml:"name"`
					ConfigMap             *ref   `yaml:"configMap"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   meta              `yaml:"metadata"`
	Type       string            `yaml:"type"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
}

type pvc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
	Spec       struct {
		AccessModes []string `yaml:"accessModes"`
		Resources   struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
	} `yaml:"spec"`
}

// stage is one stage Job (Kubernetes) or one case arm (Slurm).
type stage struct {
	file        string
	group       int
	name        string
	completions int // Kubernetes only
	parallelism int
	job         *job
	script      []string // shell lines
}

// k8s is the parsed Kubernetes folder.
type k8s struct {
	configMaps map[string]*configMap // ConfigMaps and Secrets by name
	pvcs       map[string]*pvc
	stages     []stage
}

var stageFile = regexp.MustCompile(`^k8s/([0-9]{2})-([a-z-]+)\.yaml$`)

// decodeStrict decodes every document of data, choosing the type by kind.
func decodeStrict(name, data string, k *k8s) error {
	dec := yaml.NewDecoder(strings.NewReader(data))
	for i := 0; ; i++ {
		var node yaml.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		var head struct {
			Kind string `yaml:"kind"`
		}
		if err := node.Decode(&head); err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		raw, err := yaml.Marshal(&node)
		if err != nil {
			return err
		}
		strict := func(v any) error {
			d := yaml.NewDecoder(bytes.NewReader(raw))
			d.KnownFields(true)
			if err := d.Decode(v); err != nil {
				return fmt.Errorf("%s: %s document %d: %w", name, head.Kind, i, err)
			}
			return nil
		}
		switch head.Kind {
		case "ConfigMap", "Secret":
			var c configMap
			if err := strict(&c); err != nil {
				return err
			}
			k.configMaps[c.Metadata.Name] = &c
		case "PersistentVolumeClaim":
			var p pvc
			if err := strict(&p); err != nil {
				return err
			}
			k.pvcs[p.Metadata.Name] = &p
		case "Job":
			var j job
			if err := strict(&j); err != nil {
				return err
			}
			m := stageFile.FindStringSubmatch(name)
			if m == nil {
				return fmt.Errorf("%s: a Job outside a stage file NN-name.yaml", name)
			}
			g, _ := strconv.Atoi(m[1])
			st := stage{file: name, group: g, name: m[2], job: &j}
			if j.Spec.Completions != nil {
				st.completions = *j.Spec.Completions
			}
			if j.Spec.Parallelism != nil {
				st.parallelism = *j.Spec.Parallelism
			}
			if cs := j.Spec.Template.Spec.Containers; len(cs) == 1 && len(cs[0].Args) == 1 {
				st.script = scriptLines(cs[0].Args[0])
			}
			k.stages = append(k.stages, st)
		default:
			return fmt.Errorf("%s: document %d: unexpected kind %q", name, i, head.Kind)
		}
	}
}

func parseK8s(fs files) (*k8s, error) {
	k := &k8s{configMaps: map[string]*configMap{}, pvcs: map[string]*pvc{}}
	var names []string
	for n := range fs {
		if strings.HasPrefix(n, "k8s/") && strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	sort.Strings(names) // the order run.sh applies them in
	for _, n := range names {
		if err := decodeStrict(n, fs[n], k); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// scriptLines splits a shell script into logical lines (joining
// backslash continuations, dropping blanks and comments).
func scriptLines(script string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(script, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		l = strings.TrimSpace(cur + l)
		cur = ""
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// shellWords splits one simple command line into words the way sh does for
// the constructs the scripts use: blanks separate words, '…' is literal,
// "…" keeps $NAME expansions as text, a backslash escapes one character.
// Expansions stay unexpanded ($NAME, ${NAME}, $(…)).
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`+"`", line[i+1]) >= 0 {
					i++
				}
				w.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == ';' || c == '|' || c == '&' || c == '>' || c == '<':
			return nil, fmt.Errorf("%q: only simple commands are checked, not %q", line, c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// expand replaces $NAME and ${NAME} by vars[NAME] where it is set.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		name := varRef.FindStringSubmatch(m)[1]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// invocation is one vertebrae command line of a stage script.
type invocation struct {
	line  string
	words []string // after "vertebrae", local variables expanded
}

// invocations returns the vertebrae command lines of a script with the
// script's own plain variables (x="…" lines) expanded, and all its variables
// (command substitutions such as x=$(jq …) as written, not expanded).
func invocations(script []string) ([]invocation, map[string]string, error) {
	local, opaque := map[string]string{}, map[string]string{}
	var out []invocation
	for _, l := range script {
		if m := assignment.FindStringSubmatch(l); m != nil {
			if v, err := shellWords(m[2]); err == nil && len(v) == 1 {
				local[m[1]] = expand(v[0], local)
			} else {
				opaque[m[1]] = m[2]
			}
			continue
		}
		rest := strings.TrimPrefix(l, "exec ")
		if !strings.HasPrefix(rest, "vertebrae ") {
			continue
		}
		words, err := shellWords(rest)
		if err != nil {
			return nil, nil, err
		}
		for i := range words {
			words[i] = expand(words[i], local)
		}
		out = append(out, invocation{line: l, words: words[1:]})
	}
	for k, v := range opaque {
		local[k] = v
	}
	return out, local, nil
}

// ---- Slurm ----

type slurmSubmit struct {
	variable string // shell variable holding the job id
	name     string // stage argument
	jobName  string
	deps     []string // job-id variables of afterok
	array    string   // parameter in --array=0-$((P - 1)), "" if none
	arrayRaw string
}

var submitLine = regexp.MustCompile(`^([a-z]+)=\$\(\s*"\$\{sb\[@\]\}"\s+(.*)\)$`)
var arrayRange = regexp.MustCompile(`^0-\$\(\(([A-Z_]+) - 1\)\)$`)

func parseSubmit(script string) ([]slurmSubmit, error) {
	var out []slurmSubmit
	for _, l := range scriptLines(script) {
		m := submitLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		words, err := shellWords(m[2])
		if err != nil {
			return nil, err
		}
		s := slurmSubmit{variable: m[1]}
		if len(words) < 2 || words[len(words)-2] != "$stage" {
			return nil, fmt.Errorf("submit.sh: %q does not end with \"$stage\" STAGE", l)
		}
		s.name = words[len(words)-1]
		for _, w := range words[:len(words)-2] {
			k, v, _ := strings.Cut(w, "=")
			switch k {
			case "--job-name":
				s.jobName = v
			case "--dependency":
				d, ok := strings.CutPrefix(v, "afterok:")
				if !ok {
					return nil, fmt.Errorf("submit.sh: %q: dependency must be afterok", l)
				}
				for _, id := range strings.Split(d, ":") {
					s.deps = append(s.deps, strings.TrimPrefix(id, "$"))
				}
			case "--array":
				s.arrayRaw = v
				if a := arrayRange.FindStringSubmatch(v); a != nil {
					s.array = a[1]
				}
			default:
				return nil, fmt.Errorf("submit.sh: %q: unexpected option %s", l, w)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

var caseArm = regexp.MustCompile(`^([a-z-]+|\*)\)$`)

// parseStageScript returns the case arms of stage.sbatch in order, with the
// lines before the case (e.g. state=…) prepended to each.
func parseStageScript(script string) ([]stage, error) {
	var out []stage
	var prelude []string
	inCase := false
	var cur *stage
	for _, l := range scriptLines(script) {
		switch {
		case strings.HasPrefix(l, "case "):
			inCase = true
		case !inCase:
			if assignment.MatchString(l) {
				prelude = append(prelude, l)
			}
		case l == "esac":
			inCase = false
		case caseArm.MatchString(l):
			name := strings.TrimSuffix(l, ")")
			if name == "*" {
				cur = nil
				continue
			}
			out = append(out, stage{file: "slurm/stage.sbatch", name: name, script: append([]string(nil), prelude...)})
			cur = &out[len(out)-1]
		case l == ";;":
			cur = nil
		case cur != nil:
			cur.script = append(cur.script, l)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("slurm/stage.sbatch: no case arms")
	}
	return out, nil
}

// mountDir is the directory a file at p is mounted from.
func mountDir(p string) string { return path.Dir(p) }
