package deploytest

import (
	"fmt"
	"io"
	"os/exec"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/cli"
	"github.com/vertebrae-eval/vertebrae/runspec"
)

// checker collects the problems of one deployment folder.
type checker struct{ problems []string }

func (c *checker) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// parsedCmd is a vertebrae command line checked against the command tree.
type parsedCmd struct {
	sub   string            // retrieval subcommand
	flags map[string]string // flag → raw value (bool flags "true")
}

// parseCommand checks words (after "vertebrae") against the real command
// tree: a retrieval subcommand whose flags exist and accept the values
// (variables replaced by sample values), with no positional arguments.
func parseCommand(where string, words []string, samples map[string]string) (parsedCmd, error) {
	root := cli.CommandTree(io.Discard, io.Discard)
	sample := make([]string, len(words))
	for i, w := range words {
		sample[i] = expand(w, samples)
	}
	cmd, rest, err := root.Find(sample)
	if err != nil {
		return parsedCmd{}, fmt.Errorf("%s: %v", where, err)
	}
	if cmd.Parent() == nil || cmd.Parent().Name() != "retrieval" || len(words) < 2 || words[0] != "retrieval" || words[1] != cmd.Name() {
		return parsedCmd{}, fmt.Errorf("%s: %q is not a vertebrae retrieval subcommand", where, strings.Join(words, " "))
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return parsedCmd{}, fmt.Errorf("%s: vertebrae %s: %v", where, strings.Join(words[:2], " "), err)
	}
	if args := cmd.Flags().Args(); len(args) > 0 {
		return parsedCmd{}, fmt.Errorf("%s: vertebrae %s: unexpected arguments %q", where, strings.Join(words[:2], " "), args)
	}
	p := parsedCmd{sub: cmd.Name(), flags: map[string]string{}}
	raw := words[2:]
	for i := 0; i < len(raw); i++ {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(raw[i], "--"), "=")
		if !strings.HasPrefix(raw[i], "--") {
			return parsedCmd{}, fmt.Errorf("%s: vertebrae %s: write flags as --name (got %q)", where, cmd.Name(), raw[i])
		}
		f := cmd.Flags().Lookup(name)
		switch {
		case hasVal:
		case f.NoOptDefVal != "":
			val = "true"
		case i+1 < len(raw):
			i++
			val = raw[i]
		}
		if _, dup := p.flags[name]; dup {
			return parsedCmd{}, fmt.Errorf("%s: vertebrae %s: --%s given twice", where, cmd.Name(), name)
		}
		p.flags[name] = val
	}
	return p, nil
}

// stageCmds is what the checks learn from one stage family (Kubernetes or
// Slurm): per stage, its commands, normalised so that the two families can
// be compared (the shard-index variable becomes $SHARD_INDEX).
type stageCmds map[string][]parsedCmd

// checkStages checks the stage scripts of one family. indexVar is the
// variable the platform sets per array task; params names the parameters
// available to every stage.
func (c *checker) checkStages(family string, stages []stage, indexVar string, params map[string]string) stageCmds {
	known := map[string]bool{indexVar: true}
	for k := range params {
		known[k] = true
	}
	samples := map[string]string{indexVar: "0"}
	for k, v := range params {
		samples[k] = v
	}
	out := stageCmds{}
	var planPath, relPath, keysPath, scorePath, shardBy string
	var positives *parsedCmd // the positives stage's command, once checked
	for si, st := range stages {
		where := fmt.Sprintf("%s stage %s", family, st.name)
		if si < len(wantStages) && wantStages[si].name != st.name {
			c.errorf("%s: stage %d is %s, want %s (SPEC §11.4 order)", family, si, st.name, wantStages[si].name)
			continue
		}
		if si >= len(wantStages) {
			c.errorf("%s: unexpected stage %s", family, st.name)
			continue
		}
		want := wantStages[si]
		invs, local, err := invocations(st.script)
		if err != nil {
			c.errorf("%s: %v", where, err)
			continue
		}
		// Every variable a script reads is set: by the platform, the
		// parameters, keys.env (when sourced) or the script itself.
		defined := map[string]bool{}
		for k := range known {
			defined[k] = true
		}
		for k := range local {
			defined[k] = true
		}
		sourcesKeys := false
		for _, l := range st.script {
			if p, ok := strings.CutPrefix(l, ". "); ok {
				w, _ := shellWords(p)
				if len(w) != 1 || keysPath == "" || expand(w[0], local) != keysPath {
					c.errorf("%s: sources %q, not the keys.env the plan stage writes (%s)", where, p, keysPath)
				}
				sourcesKeys = true
				for _, k := range keysEnvVars {
					defined[k] = true
				}
			}
		}
		for _, l := range st.script {
			for _, m := range varRef.FindAllStringSubmatch(l, -1) {
				if !defined[m[1]] {
					c.errorf("%s: reads $%s, which nothing sets", where, m[1])
				}
			}
			if (want.sharded == "") == strings.Contains(l, indexVar) && strings.HasPrefix(strings.TrimPrefix(l, "exec "), "vertebrae ") {
				if want.sharded == "" {
					c.errorf("%s: a single-task stage reads %s", where, indexVar)
				} else {
					c.errorf("%s: the sharded command does not take its shard index from %s: %s", where, indexVar, l)
				}
			}
		}
		var subs []string
		var cmds []parsedCmd
		for _, inv := range invs {
			p, err := parseCommand(where, inv.words, samples)
			if err != nil {
				c.errorf("%v", err)
				continue
			}
			for k, v := range p.flags {
				p.flags[k] = strings.ReplaceAll(v, "$"+indexVar, "$SHARD_INDEX")
			}
			subs = append(subs, p.sub)
			cmds = append(cmds, p)
			if p.flags["store"] != "$VERTEBRAE_STORE" {
				c.errorf("%s: vertebrae %s --store %q, want \"$VERTEBRAE_STORE\"", where, p.sub, p.flags["store"])
			}
		}
		if !slices.Equal(subs, want.cmds) {
			c.errorf("%s: runs %v, want %v", where, subs, want.cmds)
			continue
		}
		expect := func(p parsedCmd, flag, value string) {
			if got, ok := p.flags[flag]; !ok || got != value {
				c.errorf("%s: vertebrae retrieval %s --%s %q, want %q", where, p.sub, flag, got, value)
			}
		}
		absent := func(p parsedCmd, flag string) {
			if v, ok := p.flags[flag]; ok {
				c.errorf("%s: vertebrae retrieval %s must not pass --%s (%q)", where, p.sub, flag, v)
			}
		}
		switch want.name {
		case "plan":
			expect(cmds[0], "spec", "$VERTEBRAE_RUN_FILE")
			expect(cmds[0], "extractor", "$VERTEBRAE_EXTRACTOR")
			expect(cmds[0], "total-shards", "$VERTEBRAE_EMBED_SHARDS")
			expect(cmds[1], "spec", "$VERTEBRAE_RUN_FILE")
			planPath, relPath = cmds[0].flags["output-json"], cmds[1].flags["output-json"]
			if planPath == "" || relPath == "" {
				c.errorf("%s: plan and write-relevance must write --output-json for the later stages", where)
			}
			// keys.env: written to a temporary name, then renamed, from
			// the plan and the relevance document.
			for _, l := range st.script {
				if w, err := shellWords(l); err == nil && len(w) == 3 && w[0] == "mv" {
					keysPath = expand(w[2], local)
				}
			}
			if keysPath == "" || !strings.HasSuffix(keysPath, "/keys.env") {
				c.errorf("%s: does not move keys.env into place", where)
			}
			script := strings.Join(st.script, "\n")
			for _, frag := range []string{`(.side | ascii_upcase)_KEY=`, `RELEVANCE_KEY=`, path.Base(planPath), path.Base(relPath)} {
				if !strings.Contains(script, frag) {
					c.errorf("%s: keys.env is not written from the plan and relevance documents (missing %q)", where, frag)
				}
			}
		case "embed-query", "embed-gallery":
			expect(cmds[0], "plan", planPath)
			expect(cmds[0], "extractor", "$VERTEBRAE_EXTRACTOR")
			expect(cmds[0], "side", strings.TrimPrefix(want.name, "embed-"))
			expect(cmds[0], "shard-index", "$SHARD_INDEX")
		case "merge":
			for i, side := range []string{"query", "gallery"} {
				expect(cmds[i], "plan", planPath)
				expect(cmds[i], "extractor", "$VERTEBRAE_EXTRACTOR")
				expect(cmds[i], "side", side)
			}
		case "positives", "score", "finalize":
			if !sourcesKeys {
				c.errorf("%s: does not source keys.env", where)
			}
			expect(cmds[0], "query-key", "$QUERY_KEY")
			expect(cmds[0], "gallery-key", "$GALLERY_KEY")
			expect(cmds[0], "relevance-key", "$RELEVANCE_KEY")
			expect(cmds[0], "config", "$VERTEBRAE_RUN_FILE")
			expect(cmds[0], "total-shards", "$VERTEBRAE_SCORE_SHARDS")
			switch want.name {
			case "positives":
				// score --stage positives: one task per score shard, the
				// same shards.
				expect(cmds[0], "stage", "positives")
				expect(cmds[0], "shard-index", "$SHARD_INDEX")
				absent(cmds[0], "finalize")
				absent(cmds[0], "output-key")
				positives = &cmds[0]
			case "score":
				shardBy = cmds[0].flags["shard-by"]
				expect(cmds[0], "shard-index", "$SHARD_INDEX")
				if v, ok := cmds[0].flags["stage"]; ok && v != "count" {
					c.errorf("%s: --stage %q: the score shards run the count stage (the default)", where, v)
				}
				absent(cmds[0], "finalize")
				absent(cmds[0], "output-key")
				// The score shards read only their rows when they are
				// the shards the positives stages were run for: the same
				// command apart from --stage (same layout too).
				if positives == nil {
					c.errorf("%s: no positives stage before the score shards (they would read the whole gallery)", where)
				} else {
					if a, b := withoutStage(*positives), withoutStage(cmds[0]); !reflect.DeepEqual(a, b) {
						c.errorf("%s: the positives stage runs %v, the score shards %v: want the same command apart from --stage positives (same --total-shards, shard index and inputs)", where, a, b)
					}
				}
			default:
				expect(cmds[0], "finalize", "true")
				if got := cmds[0].flags["shard-by"]; got != shardBy {
					c.errorf("%s: --shard-by %q, but the score shards were cut with %q", where, got, shardBy)
				}
				absent(cmds[0], "shard-index")
				absent(cmds[0], "output-key")
				if scorePath = cmds[0].flags["output-json"]; scorePath == "" {
					c.errorf("%s: finalize must write --output-json for the report stage", where)
				}
			}
		case "report":
			k := strings.TrimPrefix(cmds[0].flags["score-key"], "$")
			src, ok := local[k]
			w, _ := shellWords(strings.TrimSuffix(strings.TrimPrefix(src, "$("), ")"))
			if !ok || len(w) != 4 || strings.Join(w[:3], " ") != "jq -r .key" || expand(w[3], local) != scorePath {
				c.errorf("%s: --score-key is not the key finalize wrote to %s (got %q = %q)", where, scorePath, cmds[0].flags["score-key"], src)
			}
			for _, f := range []string{"json", "markdown", "csv"} {
				if cmds[0].flags[f] == "" {
					c.errorf("%s: from-artifacts writes no --%s report", where, f)
				}
			}
		}
		out[st.name] = cmds
	}
	if len(stages) < len(wantStages) {
		c.errorf("%s: %d stages, want %d (%v)", family, len(stages), len(wantStages), wantStages)
	}
	return out
}

// imagePlaceholder is the image the manifests name until run.sh sets one.
const imagePlaceholder = "vertebrae:0.1.0"

// checkK8s checks the Kubernetes folder and returns its commands.
func (c *checker) checkK8s(fs files) stageCmds {
	k, err := parseK8s(fs)
	if err != nil {
		c.errorf("%v", err)
		return nil
	}
	params := k.configMaps["vertebrae-params"]
	runCM := k.configMaps["vertebrae-run"]
	secret := k.configMaps["vertebrae-store"]
	work := k.pvcs["vertebrae-work"]
	if params == nil || runCM == nil || secret == nil || work == nil {
		c.errorf("k8s: want ConfigMaps vertebrae-params and vertebrae-run, the Secret vertebrae-store (example) and the PVC vertebrae-work")
		return nil
	}
	if secret.Kind != "Secret" || secret.StringData["VERTEBRAE_STORE"] == "" {
		c.errorf("k8s: the Secret vertebrae-store must provide VERTEBRAE_STORE")
	}
	if !slices.Contains(work.Spec.AccessModes, "ReadWriteMany") {
		c.errorf("k8s: the work volume is shared by all pods of a stage: accessModes must include ReadWriteMany, got %v", work.Spec.AccessModes)
	}
	p := params.Data
	runFile, workDir := p["VERTEBRAE_RUN_FILE"], p["VERTEBRAE_WORK"]
	if !path.IsAbs(runFile) || !path.IsAbs(workDir) {
		c.errorf("k8s: VERTEBRAE_RUN_FILE %q and VERTEBRAE_WORK %q must be absolute", runFile, workDir)
	}
	// The run file parses, names the extractor, and reads its dataset from
	// the work volume (relative paths would resolve into the read-only
	// ConfigMap mount).
	if data, ok := runCM.Data[path.Base(runFile)]; !ok {
		c.errorf("k8s: ConfigMap vertebrae-run has no %s", path.Base(runFile))
	} else if spec, err := runspec.Parse(runFile, []byte(data)); err != nil {
		c.errorf("k8s: run file: %v", err)
	} else {
		if !slices.ContainsFunc(spec.Extractors, func(e runspec.Extractor) bool { return e.Name == p["VERTEBRAE_EXTRACTOR"] }) {
			c.errorf("k8s: the run file has no extractor %q (VERTEBRAE_EXTRACTOR)", p["VERTEBRAE_EXTRACTOR"])
		}
		for _, f := range []string{spec.Dataset.Queries.Path, spec.Dataset.Gallery.Path} {
			if f != "" && !strings.HasPrefix(f, workDir+"/") {
				c.errorf("k8s: dataset file %s is not on the work volume %s", f, workDir)
			}
		}
	}
	shards := map[string]int{}
	for _, name := range []string{"VERTEBRAE_EMBED_SHARDS", "VERTEBRAE_SCORE_SHARDS"} {
		n, err := strconv.Atoi(p[name])
		if err != nil || n < 1 {
			c.errorf("k8s: %s = %q, want a positive integer", name, p[name])
		}
		shards[name] = n
	}
	for i, st := range k.stages {
		where := "k8s " + st.file
		j := st.job
		if i < len(wantStages) && (st.group != wantStages[i].group || st.name != wantStages[i].name) {
			c.errorf("%s: stage %d is %d-%s, want %d-%s", where, i, st.group, st.name, wantStages[i].group, wantStages[i].name)
			continue
		}
		if j.APIVersion != "batch/v1" || j.Metadata.Name != "vertebrae-"+st.name || j.Metadata.Labels["vertebrae.dev/stage"] != st.name {
			c.errorf("%s: want a batch/v1 Job named vertebrae-%s labelled vertebrae.dev/stage=%s", where, st.name, st.name)
		}
		if j.Spec.CompletionMode != "Indexed" {
			c.errorf("%s: completionMode %q, want Indexed (it sets JOB_COMPLETION_INDEX)", where, j.Spec.CompletionMode)
		}
		if j.Spec.Completions == nil || j.Spec.Parallelism == nil || st.parallelism < 1 || st.parallelism > st.completions {
			c.errorf("%s: completions %d and parallelism %d: want 1 <= parallelism <= completions", where, st.completions, st.parallelism)
		}
		if i < len(wantStages) {
			want := 1
			if s := wantStages[i].sharded; s != "" {
				want = shards[s]
			}
			if st.completions != want {
				c.errorf("%s: completions %d, want %d (%s)", where, st.completions, want, cmp(wantStages[i].sharded, "a single-task stage"))
			}
		}
		if j.Spec.BackoffLimitPerIndex == nil || *j.Spec.BackoffLimitPerIndex < 1 {
			c.errorf("%s: backoffLimitPerIndex must be >= 1 so a failed shard is retried on its own", where)
		}
		if pf := j.Spec.PodFailurePolicy; pf == nil || !slices.ContainsFunc(pf.Rules, func(r failureRule) bool {
			return r.Action == "FailIndex" && r.OnExitCodes != nil && r.OnExitCodes.ContainerName == "vertebrae" &&
				r.OnExitCodes.Operator == "In" && slices.Equal(r.OnExitCodes.Values, []int{2})
		}) {
			c.errorf("%s: podFailurePolicy must fail the index on exit code 2 (usage error) instead of retrying", where)
		}
		ps := j.Spec.Template.Spec
		if ps.RestartPolicy != "Never" {
			c.errorf("%s: restartPolicy %q, want Never (backoffLimitPerIndex and podFailurePolicy need it)", where, ps.RestartPolicy)
		}
		if len(ps.Containers) != 1 {
			c.errorf("%s: want one container, got %d", where, len(ps.Containers))
			continue
		}
		ct := ps.Containers[0]
		if ct.Name != "vertebrae" || ct.Image == "" || !slices.Equal(ct.Command, []string{"/bin/sh", "-euc"}) || len(ct.Args) != 1 {
			c.errorf("%s: want container vertebrae with an image, command [/bin/sh -euc] and one script argument", where)
		}
		// run.sh replaces this placeholder line with $IMAGE.
		if ct.Image != imagePlaceholder || !regexp.MustCompile(`(?m)^          image: `+regexp.QuoteMeta(imagePlaceholder)+` `).MatchString(fs[st.file]) {
			c.errorf("%s: the image line must be `          image: %s …` (run.sh substitutes $IMAGE for it)", where, imagePlaceholder)
		}
		if ct.Resources.Requests["cpu"] == "" || ct.Resources.Requests["memory"] == "" || ct.Resources.Limits["memory"] == "" {
			c.errorf("%s: cpu and memory requests and a memory limit are required (sizing)", where)
		}
		var envCM, envSecret bool
		for _, e := range ct.EnvFrom {
			envCM = envCM || e.ConfigMapRef != nil && e.ConfigMapRef.Name == "vertebrae-params"
			envSecret = envSecret || e.SecretRef != nil && e.SecretRef.Name == "vertebrae-store"
		}
		if !envCM || !envSecret {
			c.errorf("%s: envFrom must include the ConfigMap vertebrae-params and the Secret vertebrae-store", where)
		}
		vols := map[string]string{}
		for _, v := range ps.Volumes {
			switch {
			case v.ConfigMap != nil:
				vols[v.Name] = "configmap:" + v.ConfigMap.Name
			case v.PersistentVolumeClaim != nil:
				vols[v.Name] = "pvc:" + v.PersistentVolumeClaim.ClaimName
			}
		}
		mounts := map[string]string{}
		for _, m := range ct.VolumeMounts {
			mounts[m.MountPath] = vols[m.Name]
		}
		// The plan records the run file's path and the scripts hand files
		// over through the work volume: both at the same place in every pod.
		if mounts[mountDir(runFile)] != "configmap:vertebrae-run" || mounts[workDir] != "pvc:vertebrae-work" {
			c.errorf("%s: want the run file ConfigMap at %s and the work PVC at %s, got mounts %v", where, mountDir(runFile), workDir, mounts)
		}
	}
	if !strings.Contains(fs["k8s/run.sh"], `image:\) `+imagePlaceholder+` `) {
		c.errorf("k8s/run.sh: does not substitute the image placeholder %s", imagePlaceholder)
	}
	// run.sh applies the stage groups in order and waits for each.
	if m := regexp.MustCompile(`(?m)^for stage in ([0-9 ]+); do$`).FindStringSubmatch(fs["k8s/run.sh"]); m == nil {
		c.errorf("k8s/run.sh: no `for stage in …; do` loop over the stage groups")
	} else {
		var groups []string
		for _, s := range wantStages {
			if g := strconv.Itoa(s.group); !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		if got := strings.Fields(m[1]); !slices.Equal(got, groups) {
			c.errorf("k8s/run.sh: runs stage groups %v, want %v", got, groups)
		}
	}
	env := map[string]string{}
	for k, v := range p {
		env[k] = v
	}
	for k, v := range secret.StringData {
		env[k] = v
	}
	return c.checkStages("k8s", k.stages, "JOB_COMPLETION_INDEX", env)
}

// withoutStage is a score command's flags without --stage and with the
// default layout spelled out, for comparing the positives and count stages.
func withoutStage(p parsedCmd) map[string]string {
	m := map[string]string{}
	for k, v := range p.flags {
		m[k] = v
	}
	delete(m, "stage")
	if m["shard-by"] == "" {
		m["shard-by"] = "contiguous"
	}
	return m
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkSlurm checks the Slurm scripts and returns their commands.
func (c *checker) checkSlurm(fs files) stageCmds {
	subs, err := parseSubmit(fs["slurm/submit.sh"])
	if err != nil {
		c.errorf("%v", err)
		return nil
	}
	stages, err := parseStageScript(fs["slurm/stage.sbatch"])
	if err != nil {
		c.errorf("%v", err)
		return nil
	}
	params := map[string]string{"VERTEBRAE_RUN_FILE": "/shared/run.yaml", "VERTEBRAE_WORK": "/shared/eval",
		"VERTEBRAE_STORE": "s3://b/p", "VERTEBRAE_EXTRACTOR": "tables", "VERTEBRAE_EMBED_SHARDS": "4", "VERTEBRAE_SCORE_SHARDS": "8"}
	for k := range params {
		if !regexp.MustCompile(`(?m)^export .*\b` + k + `\b`).MatchString(fs["slurm/submit.sh"]) {
			c.errorf("slurm/submit.sh: does not export %s to the stages", k)
		}
	}
	if len(subs) != len(wantStages) {
		c.errorf("slurm/submit.sh: submits %d stages, want %d", len(subs), len(wantStages))
	}
	var prev, cur []string // job-id variables of the previous / current group
	group := -1
	for i, s := range subs {
		if i >= len(wantStages) {
			break
		}
		w := wantStages[i]
		where := "slurm/submit.sh stage " + s.name
		if s.name != w.name || s.jobName != "vertebrae-"+w.name {
			c.errorf("%s: stage %d is %s (job name %s), want %s", where, i, s.name, s.jobName, w.name)
			continue
		}
		if w.group != group {
			prev, cur, group = cur, nil, w.group
		}
		cur = append(cur, s.variable)
		if !slices.Equal(sorted(s.deps), sorted(prev)) {
			c.errorf("%s: depends on afterok:%v, want the previous stage %v", where, s.deps, prev)
		}
		if s.array != w.sharded {
			c.errorf("%s: --array=%q, want 0-$((%s - 1)) (one task per shard)", where, s.arrayRaw, cmp(w.sharded, "none: a single-task stage"))
		}
	}
	return c.checkStages("slurm", stages, "SLURM_ARRAY_TASK_ID", params)
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// check runs every check over a deployment folder.
func check(fs files) []string {
	var c checker
	k := c.checkK8s(fs)
	s := c.checkSlurm(fs)
	// Both families run the same commands, stage by stage. Paths differ
	// only in where the work directory is, which both take from
	// $VERTEBRAE_WORK.
	if k != nil && s != nil && !reflect.DeepEqual(k, s) {
		for _, w := range wantStages {
			if !reflect.DeepEqual(k[w.name], s[w.name]) {
				c.errorf("stage %s: Kubernetes runs %v, Slurm runs %v", w.name, k[w.name], s[w.name])
			}
		}
	}
	// The image has the binary, a shell and jq, built without cgo.
	df := fs["Dockerfile"]
	for _, frag := range []string{"CGO_ENABLED=0 go build", "./cmd/vertebrae", "/usr/local/bin/vertebrae", "jq"} {
		if !strings.Contains(df, frag) {
			c.errorf("Dockerfile: missing %q", frag)
		}
	}
	return c.problems
}

func TestDeployManifests(t *testing.T) {
	fs, err := readDeploy()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k8s/00-config.yaml", "k8s/00-workspace.yaml", "k8s/secret.example.yaml", "k8s/run.sh",
		"k8s/10-plan.yaml", "k8s/40-score.yaml", "slurm/submit.sh", "slurm/stage.sbatch", "Dockerfile"} {
		if _, ok := fs[want]; !ok {
			t.Errorf("deploy/%s is missing", want)
		}
	}
	for _, p := range check(fs) {
		t.Error(p)
	}
	// Every script parses (sh -n for the pods' /bin/sh, bash -n for the
	// rest): the checks above read only the vertebrae lines.
	k, err := parseK8s(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range k.stages {
		script := st.job.Spec.Template.Spec.Containers[0].Args[0]
		if out, err := exec.Command("/bin/sh", "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s: sh -n: %v\n%s", st.file, err, out)
		}
	}
	for _, f := range []string{"k8s/run.sh", "slurm/submit.sh", "slurm/stage.sbatch", "ci/jobarray.sh"} {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s: bash -n: %v\n%s", f, err, out)
		}
	}
}

// Each breakage of a manifest is caught by the checks (a check that cannot
// fail shows nothing).
func TestDeployChecksCatchBreakage(t *testing.T) {
	fs, err := readDeploy()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, old, new, want string
	}{
		{"unknown flag", "k8s/20-embed-gallery.yaml", "--side gallery", "--sides gallery", "unknown flag: --sides"},
		{"unknown subcommand", "k8s/30-merge.yaml", "retrieval merge --store \"$VERTEBRAE_STORE\" --plan \"$VERTEBRAE_WORK/state/plan.json\" --extractor \"$VERTEBRAE_EXTRACTOR\" --side query", "retrieval merge-shards --store x", "not a vertebrae retrieval subcommand"},
		{"bad int value", "k8s/10-plan.yaml", `--total-shards "$VERTEBRAE_EMBED_SHARDS"`, `--total-shards many`, "invalid argument"},
		{"wrong side", "k8s/20-embed-query.yaml", "--side query", "--side gallery", `--side "gallery", want "query"`},
		{"no shard index", "k8s/40-score.yaml", ` --shard-index "$JOB_COMPLETION_INDEX"`, "", "does not take its shard index from JOB_COMPLETION_INDEX"},
		{"fixed shard index", "slurm/stage.sbatch", `--side gallery --shard-index "$SLURM_ARRAY_TASK_ID"`, `--side gallery --shard-index 0`, "does not take its shard index from SLURM_ARRAY_TASK_ID"},
		{"index in a single-task stage", "k8s/50-finalize.yaml", "--finalize", `--finalize --shard-index "$JOB_COMPLETION_INDEX"`, "single-task stage reads JOB_COMPLETION_INDEX"},
		{"completions", "k8s/40-score.yaml", "completions: 8", "completions: 7", "completions 7, want 8"},
		{"parallelism", "k8s/20-embed-query.yaml", "parallelism: 4", "parallelism: 5", "want 1 <= parallelism <= completions"},
		{"not indexed", "k8s/20-embed-query.yaml", "completionMode: Indexed", "completionMode: NonIndexed", "want Indexed"},
		{"no per-index backoff", "k8s/40-score.yaml", "backoffLimitPerIndex: 3", "backoffLimit: 3", "field backoffLimit not found"},
		{"misspelt field", "k8s/40-score.yaml", "parallelism: 8", "paralellism: 8", "field paralellism not found"},
		{"restart policy", "k8s/30-merge.yaml", "restartPolicy: Never", "restartPolicy: OnFailure", "want Never"},
		{"no secret", "k8s/60-report.yaml", "secretRef: {name: vertebrae-store}", "secretRef: {name: other}", "envFrom must include"},
		{"run file elsewhere", "k8s/20-embed-gallery.yaml", "mountPath: /etc/vertebrae,", "mountPath: /etc/vb,", "want the run file ConfigMap at /etc/vertebrae"},
		{"stage order", "k8s/40-score.yaml", "name: vertebrae-score", "name: vertebrae-scores", "want a batch/v1 Job named vertebrae-score"},
		{"params shards", "k8s/00-config.yaml", `VERTEBRAE_SCORE_SHARDS: "8"`, `VERTEBRAE_SCORE_SHARDS: "16"`, "completions 8, want 16"},
		{"unset variable", "k8s/40-score.yaml", `--gallery-key "$GALLERY_KEY"`, `--gallery-key "$GALERY_KEY"`, "reads $GALERY_KEY, which nothing sets"},
		{"finalize keys", "k8s/50-finalize.yaml", `--config "$VERTEBRAE_RUN_FILE"`, `--config /tmp/other.yaml`, `--config "/tmp/other.yaml", want "$VERTEBRAE_RUN_FILE"`},
		{"shard layout", "k8s/40-score.yaml", ` --shard-index "$JOB_COMPLETION_INDEX"`, ` --shard-index "$JOB_COMPLETION_INDEX" --shard-by modulo`, `--shard-by "", but the score shards were cut with "modulo"`},
		{"report key", "k8s/60-report.yaml", `jq -r .key "$VERTEBRAE_WORK/state/score.json"`, `jq -r .key "$VERTEBRAE_WORK/state/relevance.json"`, "is not the key finalize wrote"},
		{"run file extractor", "k8s/00-config.yaml", "VERTEBRAE_EXTRACTOR: tables", "VERTEBRAE_EXTRACTOR: other", `no extractor "other"`},
		{"image line", "k8s/30-merge.yaml", "image: vertebrae:0.1.0 #", "image: ghcr.io/x/vertebrae:1 #", "the image line must be"},
		{"run.sh groups", "k8s/run.sh", "for stage in 10 20 30 35 40 50 60; do", "for stage in 10 30 20 35 40 50 60; do", "runs stage groups"},
		{"run.sh skips positives", "k8s/run.sh", "for stage in 10 20 30 35 40 50 60; do", "for stage in 10 20 30 40 50 60; do", "runs stage groups"},
		{"positives without --stage", "k8s/35-positives.yaml", ` --stage positives`, ``, `--stage "", want "positives"`},
		{"positives shard index", "k8s/35-positives.yaml", ` --shard-index "$JOB_COMPLETION_INDEX"`, ` --shard-index 0`, "does not take its shard index from JOB_COMPLETION_INDEX"},
		{"positives total shards", "k8s/35-positives.yaml", `--total-shards "$VERTEBRAE_SCORE_SHARDS"`, `--total-shards "$VERTEBRAE_EMBED_SHARDS"`, `--total-shards "$VERTEBRAE_EMBED_SHARDS", want "$VERTEBRAE_SCORE_SHARDS"`},
		{"positives layout", "k8s/35-positives.yaml", ` --stage positives`, ` --stage positives --shard-by modulo`, "want the same command apart from --stage positives"},
		{"positives completions", "k8s/35-positives.yaml", "completions: 8", "completions: 4", "completions 4, want 8"},
		{"positives job name", "k8s/35-positives.yaml", "name: vertebrae-positives", "name: vertebrae-positive", "want a batch/v1 Job named vertebrae-positives"},
		{"positives inputs differ", "k8s/35-positives.yaml", ` --stage positives`, ` --stage positives --threads 1`, "want the same command apart from --stage positives"},
		{"score runs positives", "k8s/40-score.yaml", ` --shard-index "$JOB_COMPLETION_INDEX"`, ` --shard-index "$JOB_COMPLETION_INDEX" --stage positives`, "the score shards run the count stage"},
		{"score layout", "k8s/40-score.yaml", ` --shard-index "$JOB_COMPLETION_INDEX"`, ` --shard-index "$JOB_COMPLETION_INDEX" --shard-by modulo`, "want the same command apart from --stage positives"},
		{"slurm positives without --stage", "slurm/stage.sbatch", `"$SLURM_ARRAY_TASK_ID" --stage positives`, `"$SLURM_ARRAY_TASK_ID"`, `--stage "", want "positives"`},
		{"slurm positives index", "slurm/stage.sbatch", `--shard-index "$SLURM_ARRAY_TASK_ID" --stage positives`, `--shard-index 0 --stage positives`, "does not take its shard index from SLURM_ARRAY_TASK_ID"},
		{"slurm score before positives", "slurm/submit.sh",
			`positives=$( "${sb[@]}" --job-name=vertebrae-positives     --dependency="afterok:$merge"   --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" positives)
score=$(     "${sb[@]}" --job-name=vertebrae-score         --dependency="afterok:$positives" --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" score)`,
			`score=$(     "${sb[@]}" --job-name=vertebrae-score         --dependency="afterok:$merge" --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" score)
positives=$( "${sb[@]}" --job-name=vertebrae-positives     --dependency="afterok:$score"   --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" positives)`,
			"stage 4 is score (job name vertebrae-score), want positives"},
		{"slurm score not after positives", "slurm/submit.sh", `--dependency="afterok:$positives"`, `--dependency="afterok:$merge"`, "want the previous stage [positives]"},
		{"slurm positives not an array", "slurm/submit.sh", `--dependency="afterok:$merge"   --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" positives)`, `--dependency="afterok:$merge" "$stage" positives)`, "want 0-$((VERTEBRAE_SCORE_SHARDS - 1))"},
		{"slurm array range", "slurm/submit.sh", `--array="0-$((VERTEBRAE_SCORE_SHARDS - 1))"`, `--array="0-$((VERTEBRAE_EMBED_SHARDS - 1))"`, "want 0-$((VERTEBRAE_SCORE_SHARDS - 1))"},
		{"slurm dependency", "slurm/submit.sh", `--dependency="afterok:$eg:$eq"`, `--dependency="afterok:$eq"`, "want the previous stage"},
		{"slurm stage order", "slurm/submit.sh", `"$stage" finalize)`, `"$stage" report)`, "want finalize"},
		{"slurm command differs", "slurm/stage.sbatch", `--csv "$VERTEBRAE_WORK/report/per_query.csv"`, ``, "Kubernetes runs"},
		{"slurm flag", "slurm/stage.sbatch", "--finalize --output-json", "--final --output-json", "unknown flag: --final"},
		{"dockerfile cgo", "Dockerfile", "CGO_ENABLED=0 go build", "go build", "CGO_ENABLED=0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(fs[c.file], c.old) {
				t.Fatalf("%s does not contain %q", c.file, c.old)
			}
			broken := files{}
			for k, v := range fs {
				broken[k] = v
			}
			broken[c.file] = strings.Replace(fs[c.file], c.old, c.new, 1)
			problems := check(broken)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("no problem mentions %q; got %q", c.want, problems)
			}
		})
	}
}

// Without the positives stage (its manifest or its Slurm stage gone) the
// checks fail: the score shards would read the whole gallery.
func TestDeployChecksRequirePositives(t *testing.T) {
	fs, err := readDeploy()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(files)
		want string
	}{
		{"k8s manifest missing", func(f files) { delete(f, "k8s/35-positives.yaml") }, "stage 4 is 40-score, want 35-positives"},
		{"slurm submit missing", func(f files) {
			f["slurm/submit.sh"] = regexp.MustCompile(`(?m)^positives=.*\n`).ReplaceAllString(f["slurm/submit.sh"], "")
		}, "submits 7 stages, want 8"},
		{"slurm stage missing", func(f files) {
			f["slurm/stage.sbatch"] = regexp.MustCompile(`(?s)\n  positives\)\n.*?;;`).ReplaceAllString(f["slurm/stage.sbatch"], "")
		}, "slurm: stage 4 is score, want positives"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			broken := files{}
			for k, v := range fs {
				broken[k] = v
			}
			c.edit(broken)
			if reflect.DeepEqual(broken, fs) {
				t.Fatal("the edit changed nothing")
			}
			problems := check(broken)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("no problem mentions %q; got %q", c.want, problems)
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{`vertebrae retrieval plan --spec "$RUN" --x=1`, []string{"vertebrae", "retrieval", "plan", "--spec", "$RUN", "--x=1"}, false},
		{`a 'b c' "d $E" f\ g`, []string{"a", "b c", "d $E", "f g"}, false},
		{`a "b \"c\" \$d"`, []string{"a", `b "c" $d`}, false},
		{`a  ""  b`, []string{"a", "", "b"}, false},
		{`a "b`, nil, true},
		{`a 'b`, nil, true},
		{`a > f`, nil, true},
	}
	for _, c := range cases {
		got, err := shellWords(c.in)
		if (err != nil) != c.err || !c.err && !slices.Equal(got, c.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q (error %v)", c.in, got, err, c.want, c.err)
		}
	}
	if got := expand(`$A/${B}/$C`, map[string]string{"A": "x", "B": "y"}); got != "x/y/$C" {
		t.Errorf("expand = %q", got)
	}
}
