package idlist

import "testing"

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		ids      []string
		fromFile bool
		want     string
	}{
		{"row numbers", nil, true, ""},
		{"fine", []string{"a", "b"}, true, ""},
		{"empty file", []string{}, true, "q.txt: query IDs must not be empty: the file holds no IDs"},
		{"empty list", []string{}, false, "q.txt: query IDs must not be empty: the list holds no IDs"},
		{"duplicate", []string{"a", "b", "a"}, false, `q.txt: query IDs must be unique; "a" appears at index 0 and 2`},
		{"CR in a file", []string{"a\rb"}, true, `q.txt: query ID 0 ("a\rb") contains a carriage return; hint: the file seems to use CR-only (classic Mac) line endings: convert them to LF, e.g. tr '\r' '\n' < q.txt`},
		{"CR in a list", []string{"x", "a\r"}, false, `q.txt: query ID 1 ("a\r") contains a carriage return`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := Check("query", "q.txt", c.ids, c.fromFile)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
