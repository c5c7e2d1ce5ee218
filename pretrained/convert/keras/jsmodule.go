package keras

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrModule reports a JavaScript module wrapper that is not the
// browserify bundle shape expected, or whose payload is not a data literal.
var ErrModule = errors.New("keras: not a data module")

// moduleBody finds the payload of a browserify standalone bundle with one
// module, the form nsfwjs ships its models in:
//
//	!function(e){…}(function(){return function e(…){…}({1:[function(e,a,n){a.exports=<payload>},{}]},{},[1])(1)});
//
// The payload starts after the module function's "<param>.exports=".
var moduleBody = regexp.MustCompile(`\{1:\[function\(\s*[A-Za-z_$][\w$]*\s*,\s*([A-Za-z_$][\w$]*)\s*(?:,\s*[A-Za-z_$][\w$]*\s*)?\)\s*\{\s*`)

// ParseModule evaluates the data payload of a JavaScript module wrapper
// without running any JavaScript: it locates "<module>.exports=" inside the
// bundle and parses the value literal that follows. Values come back as
// encoding/json would decode them (map[string]any, []any, string, float64,
// bool, nil).
func ParseModule(src []byte) (any, error) {
	s := string(src)
	loc := moduleBody.FindStringSubmatchIndex(s)
	if loc == nil {
		return nil, fmt.Errorf("%w: no browserify module {1:[function(…){…}]}", ErrModule)
	}
	rest := s[loc[1]:]
	prefix := s[loc[2]:loc[3]] + ".exports"
	if !strings.HasPrefix(rest, prefix) {
		return nil, fmt.Errorf("%w: the module does not start with %s=", ErrModule, prefix)
	}
	p := &litParser{s: s, pos: loc[1] + len(prefix)}
	p.space()
	if !p.eat('=') {
		return nil, p.errorf("expected = after %s", prefix)
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] != '}' && p.s[p.pos] != ';' {
		return nil, p.errorf("unexpected %q after the exported value", p.s[p.pos])
	}
	return v, nil
}

// ParseWeightsModule decodes a weight shard module: its payload is one
// base64 string holding the shard's bytes.
func ParseWeightsModule(src []byte) ([]byte, error) {
	v, err := ParseModule(src)
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%w: the weight module exports a %T, not a base64 string", ErrModule, v)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: the weight module's string is not base64: %v", ErrModule, err)
	}
	return b, nil
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 200

// litParser reads the JSON-like subset of JavaScript that minifiers emit
// for data: objects with identifier, string or number keys; arrays;
// strings in single or double quotes with escapes; numbers (".5", "1e-3",
// "0x1f"); true, false, null, !0, !1 and void 0 (undefined → null).
type litParser struct {
	s   string
	pos int
}

func (p *litParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrModule, p.pos, fmt.Sprintf(format, args...))
}

func (p *litParser) space() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *litParser) eat(c byte) bool {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *litParser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d", maxDepth)
	}
	p.space()
	if p.pos >= len(p.s) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		return p.str()
	case c == '!':
		p.pos++
		p.space()
		switch {
		case strings.HasPrefix(p.s[p.pos:], "0"):
			p.pos++
			return true, nil
		case strings.HasPrefix(p.s[p.pos:], "1"):
			p.pos++
			return false, nil
		}
		return nil, p.errorf("only !0 and !1 are supported")
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, kw := range []struct {
		word string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}, {"void 0", nil}} {
		if strings.HasPrefix(p.s[p.pos:], kw.word) && !identPart(p.s, p.pos+len(kw.word)) {
			p.pos += len(kw.word)
			return kw.v, nil
		}
	}
	return nil, p.errorf("unexpected %q (not a data literal)", p.s[p.pos])
}

func identPart(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *litParser) object(depth int) (any, error) {
	p.pos++ // {
	m := map[string]any{}
	if p.eat('}') {
		return m, nil
	}
	for {
		p.space()
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if !p.eat(':') {
			return nil, p.errorf("expected : after key %q", key)
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, p.errorf("duplicate key %q", key)
		}
		m[key] = v
		if p.eat(',') {
			if p.eat('}') { // trailing comma
				return m, nil
			}
			continue
		}
		if p.eat('}') {
			return m, nil
		}
		return nil, p.errorf("expected , or } in an object")
	}
}

func (p *litParser) key() (string, error) {
	if p.pos >= len(p.s) {
		return "", p.errorf("unexpected end of input in an object")
	}
	c := p.s[p.pos]
	switch {
	case c == '"' || c == '\'':
		return p.str()
	case c >= '0' && c <= '9' || c == '.':
		v, err := p.number()
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(v.(float64), 'g', -1, 64), nil
	}
	start := p.pos
	for identPart(p.s, p.pos) {
		p.pos++
	}
	if p.pos == start || (p.s[start] >= '0' && p.s[start] <= '9') {
		return "", p.errorf("expected an object key")
	}
	return p.s[start:p.pos], nil
}

func (p *litParser) array(depth int) (any, error) {
	p.pos++ // [
	out := []any{}
	if p.eat(']') {
		return out, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.eat(',') {
			if p.eat(']') {
				return out, nil
			}
			continue
		}
		if p.eat(']') {
			return out, nil
		}
		return nil, p.errorf("expected , or ] in an array")
	}
}

func (p *litParser) number() (any, error) {
	start := p.pos
	neg := false
	if c := p.s[p.pos]; c == '-' || c == '+' {
		neg = c == '-'
		p.pos++
	}
	if strings.HasPrefix(p.s[p.pos:], "0x") || strings.HasPrefix(p.s[p.pos:], "0X") {
		p.pos += 2
		ds := p.pos
		for p.pos < len(p.s) && strings.IndexByte("0123456789abcdefABCDEF", p.s[p.pos]) >= 0 {
			p.pos++
		}
		u, err := strconv.ParseUint(p.s[ds:p.pos], 16, 64)
		if err != nil || u > 1<<53 {
			return nil, p.errorf("bad hexadecimal number %q", p.s[start:p.pos])
		}
		v := float64(u)
		if neg {
			v = -v
		}
		return v, nil
	}
	digits := 0
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
		digits++
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			digits++
		}
	}
	if digits == 0 {
		return nil, p.errorf("bad number %q", p.s[start:p.pos])
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '-' || p.s[p.pos] == '+') {
			p.pos++
		}
		ed := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == ed {
			return nil, p.errorf("bad exponent in %q", p.s[start:p.pos])
		}
	}
	if identPart(p.s, p.pos) {
		return nil, p.errorf("bad number %q", p.s[start:p.pos+1])
	}
	v, err := strconv.ParseFloat(p.s[start:p.pos], 64)
	if err != nil {
		return nil, p.errorf("bad number %q", p.s[start:p.pos])
	}
	return v, nil
}

func (p *litParser) str() (string, error) {
	quote := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return "", p.errorf("unterminated string")
		}
		c := p.s[p.pos]
		switch {
		case c == quote:
			p.pos++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", p.errorf("newline in a string")
		case c != '\\':
			// Copy a run of plain bytes at once: weight shards are
			// megabytes of base64 in one string.
			end := p.pos + 1
			for end < len(p.s) && p.s[end] != quote && p.s[end] != '\\' && p.s[end] != '\n' && p.s[end] != '\r' {
				end++
			}
			b.WriteString(p.s[p.pos:end])
			p.pos = end
			continue
		}
		p.pos++ // backslash
		if p.pos >= len(p.s) {
			return "", p.errorf("unterminated escape")
		}
		e := p.s[p.pos]
		p.pos++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0':
			b.WriteByte(0)
		case '\n': // line continuation
		case 'x':
			r, err := p.hex(2)
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		case 'u':
			r, err := p.unicodeEscape()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		default:
			b.WriteByte(e)
		}
	}
}

func (p *litParser) hex(n int) (rune, error) {
	if p.pos+n > len(p.s) {
		return 0, p.errorf("short escape")
	}
	v, err := strconv.ParseUint(p.s[p.pos:p.pos+n], 16, 32)
	if err != nil {
		return 0, p.errorf("bad escape %q", p.s[p.pos:p.pos+n])
	}
	p.pos += n
	return rune(v), nil
}

// unicodeEscape reads XXXX or {X…} after \u, joining surrogate pairs.
func (p *litParser) unicodeEscape() (rune, error) {
	if p.pos < len(p.s) && p.s[p.pos] == '{' {
		end := strings.IndexByte(p.s[p.pos:], '}')
		if end < 2 || end > 7 {
			return 0, p.errorf("bad \\u{…} escape")
		}
		v, err := strconv.ParseUint(p.s[p.pos+1:p.pos+end], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errorf("bad \\u{…} escape")
		}
		p.pos += end + 1
		return rune(v), nil
	}
	r, err := p.hex(4)
	if err != nil {
		return 0, err
	}
	if utf16.IsSurrogate(r) && strings.HasPrefix(p.s[p.pos:], `\u`) {
		save := p.pos
		p.pos += 2
		lo, err := p.hex(4)
		if err == nil {
			if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
				return dec, nil
			}
		}
		p.pos = save
	}
	if utf16.IsSurrogate(r) {
		return utf8.RuneError, nil
	}
	return r, nil
}
