package runspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a run-file error positioned at a line. Err, when set, is the
// underlying cause (for example a *retrieval.ConfigError), so callers can
// classify it with errors.As.
type Error struct {
	Path string // run file as given; "" when parsed from memory without a name
	Line int    // 1-based; 0 when no line applies
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Path == "" && e.Line == 0:
		return e.Msg
	case e.Path == "":
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	case e.Line == 0:
		return e.Path + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// maxNodes bounds the work of expanding aliases: a few kilobytes of nested
// aliases can otherwise describe billions of nodes.
const maxNodes = 1 << 18

type parser struct {
	path  string
	dir   string
	nodes int
	// Containers being expanded or merged right now; meeting one again means
	// an alias refers to its own ancestor.
	expanding map[*yaml.Node]bool
	merging   map[*yaml.Node]bool
}

func newParser(path string) *parser {
	return &parser{
		path:      path,
		dir:       filepath.Dir(path),
		expanding: map[*yaml.Node]bool{},
		merging:   map[*yaml.Node]bool{},
	}
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return &Error{Path: p.path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// wrap positions an error returned by a config constructor.
func (p *parser) wrap(line int, err error) error {
	return &Error{Path: p.path, Line: line, Msg: err.Error(), Err: err}
}

var yamlLineRe = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

var unknownAnchorRe = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// syntaxError rewrites the library's "yaml: line N: msg" as "<path>:N: msg".
func (p *parser) syntaxError(data []byte, err error) error {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return p.errorf(n, "invalid YAML: %s", m[2])
		}
	}
	line := 0
	if m := unknownAnchorRe.FindStringSubmatch(msg); m != nil {
		line = aliasLine(data, m[1])
	}
	return p.errorf(line, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// aliasLine finds the line of the first use of alias *name; the library
// reports unknown anchors without a position.
func aliasLine(data []byte, name string) int {
	needle := []byte("*" + name)
	for off := 0; ; {
		i := bytes.Index(data[off:], needle)
		if i < 0 {
			return 0
		}
		end := off + i + len(needle)
		if end == len(data) || bytes.IndexByte([]byte(" \t\r\n,[]{}"), data[end]) >= 0 {
			return 1 + bytes.Count(data[:off+i], []byte("\n"))
		}
		off = end
	}
}

// jsonStrings re-quotes the string literals of a JSON document so that the
// YAML scanner reads them as JSON does: YAML lacks the \/ escape and rejects
// \u surrogate pairs. JSON strings hold no raw newline, so lines are kept.
func jsonStrings(data []byte) []byte {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			out = append(out, data[i])
			continue
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				j++
			}
			j++
		}
		var s string
		if j >= len(data) || json.Unmarshal(data[i:j+1], &s) != nil {
			return data // not reached for valid JSON; let YAML report it
		}
		out = strconv.AppendQuote(out, s)
		i = j
	}
	return out
}

// document parses data into the root node of its single document.
func (p *parser) document(data []byte) (*yaml.Node, error) {
	if json.Valid(data) {
		data = jsonStrings(data)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errorf(1, "run file is empty")
		}
		return nil, p.syntaxError(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, p.errorf(extra.Line, "run file must hold a single YAML document")
	case !errors.Is(err, io.EOF):
		return nil, p.syntaxError(data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, p.errorf(1, "run file is empty")
	}
	return p.deref(doc.Content[0])
}

// deref follows aliases and charges the node against the expansion budget.
func (p *parser) deref(n *yaml.Node) (*yaml.Node, error) {
	line := n.Line
	for range 64 {
		if n.Kind != yaml.AliasNode {
			p.nodes++
			if p.nodes > maxNodes {
				return nil, p.errorf(line, "run file expands to more than %d YAML nodes", maxNodes)
			}
			return n, nil
		}
		if n.Alias == nil {
			return nil, p.errorf(line, "unresolved alias *%s", n.Value)
		}
		n = n.Alias
	}
	return nil, p.errorf(line, "alias chain too long")
}

// field is one key of a mapping, its value already alias-resolved.
type field struct {
	key  string
	line int // line of the key
	val  *yaml.Node
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// pairs returns the keys of mapping n in source order, with YAML merge keys
// (<<) applied: explicit keys win, then earlier merge sources.
func (p *parser) pairs(n *yaml.Node, where string) ([]field, error) {
	if p.merging[n] {
		return nil, p.errorf(n.Line, "%s: alias refers to its own ancestor", where)
	}
	p.merging[n] = true
	defer delete(p.merging, n)
	if tag := n.ShortTag(); tag != "!!map" {
		return nil, p.errorf(n.Line, "%s: unsupported YAML tag %s", where, tag)
	}
	var own, merged []field
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.deref(n.Content[i])
		if err != nil {
			return nil, err
		}
		line := n.Content[i].Line
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			fs, err := p.mergeSources(n.Content[i+1], where)
			if err != nil {
				return nil, err
			}
			merged = append(merged, fs...)
			continue
		}
		if k.Kind != yaml.ScalarNode || !isStringTag(k.ShortTag()) {
			return nil, p.errorf(line, "%s: keys must be strings; got %s", where, describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return nil, p.errorf(line, "duplicate field %q in %s (first at line %d)", k.Value, where, first)
		}
		seen[k.Value] = line
		v, err := p.deref(n.Content[i+1])
		if err != nil {
			return nil, err
		}
		own = append(own, field{key: k.Value, line: line, val: v})
	}
	for _, f := range merged {
		if _, dup := seen[f.key]; !dup {
			seen[f.key] = f.line
			own = append(own, f)
		}
	}
	return own, nil
}

// mergeSources expands the value of a merge key: a mapping or a list of
// mappings.
func (p *parser) mergeSources(v *yaml.Node, where string) ([]field, error) {
	line := v.Line
	v, err := p.deref(v)
	if err != nil {
		return nil, err
	}
	srcs := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		srcs = srcs[:0]
		for _, c := range v.Content {
			c, err := p.deref(c)
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, c)
		}
	}
	var out []field
	for _, s := range srcs {
		if s.Kind != yaml.MappingNode {
			return nil, p.errorf(line, "%s: merge key (<<) needs a mapping or a list of mappings; got %s", where, describe(s))
		}
		fs, err := p.pairs(s, where)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// Timestamps are plain strings to JSON; YAML only resolves them specially.
func isStringTag(tag string) bool { return tag == "!!str" || tag == "!!timestamp" }

// value converts a node into the JSON-like values the config constructors
// expect: string, bool, int64, float64 (finite), nil, []any, map[string]any.
func (p *parser) value(n *yaml.Node, where string) (any, error) {
	line := n.Line
	n, err := p.deref(n)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return p.scalar(n, line, where)
	case yaml.SequenceNode, yaml.MappingNode:
	default:
		return nil, p.errorf(line, "%s: unsupported YAML node", where)
	}
	if p.expanding[n] {
		return nil, p.errorf(line, "%s: alias refers to its own ancestor", where)
	}
	p.expanding[n] = true
	defer delete(p.expanding, n)
	if n.Kind == yaml.SequenceNode {
		if tag := n.ShortTag(); tag != "!!seq" {
			return nil, p.errorf(line, "%s: unsupported YAML tag %s", where, tag)
		}
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := p.value(c, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	fs, err := p.pairs(n, where)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(fs))
	for _, f := range fs {
		v, err := p.value(f.val, where+"."+f.key)
		if err != nil {
			return nil, err
		}
		out[f.key] = v
	}
	return out, nil
}

// scalar converts a resolved scalar node; line is where it was written.
func (p *parser) scalar(n *yaml.Node, line int, where string) (any, error) {
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, p.errorf(line, "%s: invalid bool %q", where, n.Value)
		}
		return b, nil
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, p.errorf(line, "%s: invalid integer %q", where, n.Value)
		}
		switch t := v.(type) {
		case int:
			return int64(t), nil
		case int64:
			return t, nil
		case uint64:
			if t <= math.MaxInt64 {
				return int64(t), nil
			}
		}
		return nil, p.errorf(line, "%s: integer %s is out of range", where, n.Value)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, p.errorf(line, "%s: invalid number %q", where, n.Value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, p.errorf(line, "%s: numbers must be finite; got %s", where, n.Value)
		}
		return f, nil
	default:
		return nil, p.errorf(line, "%s: unsupported YAML tag %s", where, tag)
	}
}

// describe names a node's kind and value for type errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "bool " + n.Value
		case "!!int", "!!float":
			return "number " + n.Value
		case "!!str", "!!timestamp":
			return strconv.Quote(n.Value)
		}
		return n.ShortTag() + " " + strconv.Quote(n.Value)
	}
	return "an alias"
}

// object is a mapping section with its keys and their lines.
type object struct {
	p      *parser
	name   string // section name in "unknown field" messages, e.g. "dataset.queries"
	prefix string // field prefix in value messages, e.g. "EmbeddingConfig"
	entry  bool   // fields are named "<prefix>: <key>" (extractor entries)
	line   int
	fields []field
	index  map[string]int
}

// object reads n (already resolved) as a mapping section written at line.
func (p *parser) object(n *yaml.Node, name string, line int) (*object, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(line, "%s must be a mapping; got %s", name, describe(n))
	}
	fs, err := p.pairs(n, name)
	if err != nil {
		return nil, err
	}
	o := &object{p: p, name: name, prefix: name, line: line, fields: fs, index: make(map[string]int, len(fs))}
	for i, f := range fs {
		o.index[f.key] = i
	}
	return o, nil
}

// allow fails on the first key, in source order, that is not in keys.
func (o *object) allow(keys ...string) error {
	for _, f := range o.fields {
		if !slices.Contains(keys, f.key) {
			return o.p.errorf(f.line, "unknown field %q in %s", f.key, o.name)
		}
	}
	return nil
}

// get returns a key's field; an explicit null counts as absent.
func (o *object) get(key string) (field, bool) {
	i, ok := o.index[key]
	if !ok || isNull(o.fields[i].val) {
		return field{}, false
	}
	return o.fields[i], true
}

// lineOf is the key's line, or the section's when the key is absent.
func (o *object) lineOf(key string) int {
	if i, ok := o.index[key]; ok {
		return o.fields[i].line
	}
	return o.line
}

// field names key in value messages.
func (o *object) field(key string) string {
	if o.entry {
		return o.prefix + ": " + key
	}
	return o.prefix + "." + key
}

func (o *object) typeErr(f field, want string) error {
	return o.p.errorf(f.line, "%s must be %s; got %s", o.field(f.key), want, describe(f.val))
}

func (o *object) str(key string, dst *string) (bool, error) {
	f, ok := o.get(key)
	if !ok {
		return false, nil
	}
	if f.val.Kind != yaml.ScalarNode || !isStringTag(f.val.ShortTag()) {
		if f.val.Kind == yaml.ScalarNode {
			return false, o.p.errorf(f.line, "%s must be a string; got %s (quote it)", o.field(f.key), describe(f.val))
		}
		return false, o.typeErr(f, "a string")
	}
	*dst = f.val.Value
	return true, nil
}

// nonBlank reads a string that must contain a non-space character.
func (o *object) nonBlank(key string, dst *string) (bool, error) {
	ok, err := o.str(key, dst)
	if ok && strings.TrimSpace(*dst) == "" {
		return false, o.p.errorf(o.lineOf(key), "%s must not be blank", o.field(key))
	}
	return ok, err
}

// path reads a non-blank path and resolves it against the run file's directory.
func (o *object) path(key string, dst *string) (bool, error) {
	ok, err := o.nonBlank(key, dst)
	if ok {
		*dst = o.p.resolve(*dst)
	}
	return ok, err
}

func (o *object) boolean(key string, dst *bool) (bool, error) {
	f, ok := o.get(key)
	if !ok {
		return false, nil
	}
	if f.val.Kind != yaml.ScalarNode || f.val.ShortTag() != "!!bool" {
		return false, o.typeErr(f, "a bool")
	}
	v, err := o.p.scalar(f.val, f.line, o.field(key))
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	*dst = b
	return ok, nil
}

func (o *object) integer(key string, dst *int) (bool, error) {
	f, ok := o.get(key)
	if !ok {
		return false, nil
	}
	n, ok := o.p.intValue(f.val, f.line)
	if !ok {
		return false, o.typeErr(f, "an integer")
	}
	*dst = n
	return true, nil
}

// intValue accepts YAML integers and integral floats (JSON writes 1e3).
func (p *parser) intValue(n *yaml.Node, line int) (int, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	tag := n.ShortTag()
	if tag != "!!int" && tag != "!!float" {
		return 0, false
	}
	v, err := p.scalar(n, line, "")
	if err != nil {
		return 0, false
	}
	return asInt(v)
}

func asInt(v any) (int, bool) {
	switch t := v.(type) {
	case int64:
		if int64(int(t)) == t {
			return int(t), true
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int(t), true
		}
	}
	return 0, false
}

// resolve makes a relative path relative to the run file's directory.
func (p *parser) resolve(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.dir, path)
}
