package keras

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// wrap puts a payload into the browserify standalone shape nsfwjs ships.
func wrap(payload string) string {
	return `!function(e){if("object"==typeof exports&&"undefined"!=typeof module)module.exports=e();else{(this).model=e()}}` +
		`(function(){return function e(a,n,i){return l}({1:[function(e,a,n){a.exports=` + payload + `},{}]},{},[1])(1)});`
}

func TestParseModule(t *testing.T) {
	cases := []struct {
		name, payload string
		want          any
	}{
		{"minified object", `{modelTopology:{keras_version:"2.2.4",sparse:!1,center:!0,seed:null},n:[1,-2,.5,-.03,1e-3,5E2,0x1f]}`,
			map[string]any{"modelTopology": map[string]any{"keras_version": "2.2.4", "sparse": false, "center": true, "seed": nil},
				"n": []any{1.0, -2.0, 0.5, -0.03, 0.001, 500.0, 31.0}}},
		{"quoted keys and escapes", `{"a b":'it\'s',"c":"\u00e9\x41\n\\","d":"\ud83d\ude00","e":"\u{1F600}"}`,
			map[string]any{"a b": "it's", "c": "éA\n\\", "d": "😀", "e": "😀"}},
		{"literals", `[true,false,null,void 0,[],{}]`, []any{true, false, nil, nil, []any{}, map[string]any{}}},
		{"whitespace and trailing commas", "{ a : [ 1 , 2 , ] , b : { c : 3 , } , }", map[string]any{"a": []any{1.0, 2.0}, "b": map[string]any{"c": 3.0}}},
		{"numeric key", `{1:"x",2.5:"y"}`, map[string]any{"1": "x", "2.5": "y"}},
		{"string payload", `"AAEC"`, "AAEC"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseModule([]byte(wrap(c.payload)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

func TestParseModuleErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"no bundle", `module.exports={a:1}`, "no browserify module"},
		{"code not data", wrap(`function(){}`), `unexpected 'f'`},
		{"call", wrap(`{a:f(1)}`), `unexpected 'f'`},
		{"unterminated string", wrap(`{a:"abc`), "unterminated string"},
		{"missing colon", wrap(`{a 1}`), "expected : after key"},
		{"duplicate key", wrap(`{a:1,a:2}`), `duplicate key "a"`},
		{"bad number", wrap(`[1.2.3]`), "expected , or ]"},
		{"bad exponent", wrap(`[1e]`), "bad exponent"},
		{"bang", wrap(`[!2]`), "only !0 and !1"},
		{"trailing junk", wrap(`{a:1} x`), "after the exported value"},
		{"deep", wrap(strings.Repeat("[", 300) + strings.Repeat("]", 300)), "nesting deeper"},
		{"end of input", `{1:[function(e,a,n){a.exports=[1,`, "unexpected end of input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseModule([]byte(c.src))
			if err == nil || !errors.Is(err, ErrModule) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrModule containing %q", err, c.want)
			}
		})
	}
}

func TestParseWeightsModule(t *testing.T) {
	raw := []byte{0, 1, 2, 250, 255}
	got, err := ParseWeightsModule([]byte(wrap(`"` + base64.StdEncoding.EncodeToString(raw) + `"`)))
	if err != nil || !reflect.DeepEqual(got, raw) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseWeightsModule([]byte(wrap(`{a:1}`))); err == nil || !strings.Contains(err.Error(), "not a base64 string") {
		t.Fatalf("object payload: %v", err)
	}
	if _, err := ParseWeightsModule([]byte(wrap(`"a*b"`))); err == nil || !strings.Contains(err.Error(), "not base64") {
		t.Fatalf("bad base64: %v", err)
	}
}

func FuzzParseModule(f *testing.F) {
	f.Add([]byte(wrap(`{modelTopology:{a:[1,.5,-2e3,!0,!1,null]},s:"x\u0041"}`)))
	f.Add([]byte(wrap(`"AAEC"`)))
	f.Add([]byte(wrap(`[void 0,{'k':'v'}]`)))
	f.Fuzz(func(t *testing.T, src []byte) {
		v, err := ParseModule(src)
		if err != nil {
			if !errors.Is(err, ErrModule) {
				t.Fatalf("error not ErrModule: %v", err)
			}
			return
		}
		_ = v
		// Whatever parses must also go through the model reader without
		// panicking.
		_, _ = ParseModelModule(src)
	})
}
