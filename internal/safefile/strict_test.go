package safefile

import (
	"strings"
	"testing"
)

func TestNoDuplicateKeys(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" is no error
	}{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": {"x": 1}, "b": {"x": 2}}`, ""},
		{`[{"a": 1}, {"a": 2}]`, ""},
		{`{"a": [1, {"a": 1}], "b": "a"}`, ""},
		{`{"a": 1, "a": 2}`, `line 1: key "a" appears twice in the top-level object`},
		{"{\"name\": \"x\",\n \"groups\": [{\"count\": 1}, {\"count\": 2,\n \"count\": 9}]}", `line 3: key "count" appears twice in groups[1]`},
		{`{"s": {"t": {"u": 1, "u": 1}}}`, `key "u" appears twice in s.t`},
		{`{"": 1, "": 2}`, `key "" appears twice`},
		{`{"a": [[], {"b": 1, "b": 1}]}`, `appears twice in a[1]`},
		// encoding/json fills one field from keys that differ in case only
		{`{"cpus": 1, "CPUS": 64}`, `key "CPUS" appears twice in the top-level object (as "cpus": keys match regardless of case)`},
		{"{\"sk\": 1, \"\u017fK\": 2}", `appears twice`}, // U+017F folds to s
		{`{"cpus": 1, "gpus": 2}`, ""},
		{`{"a": 1,`, ""}, // not JSON: the decoder says what
		{`not json`, ""},
	} {
		err := NoDuplicateKeys([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestTextProblem(t *testing.T) {
	for in, want := range map[string]string{
		"lab":                               "",
		"caf\u00e9 \u6f22\u5b57":            "",
		"a\x1b[31mred":                      "control character (U+001B)",
		"line\nforged":                      "control character (U+000A)",
		"evil\u202egnp.exe":                 "bidirectional-text control (U+202E)",
		"x\u2066y":                          "U+2066",
		strings.Repeat("n", MaxNameBytes+1): "257 bytes long, more than 256",
		strings.Repeat("n", 7<<20):          "more than 256",
		strings.Repeat("n", MaxNameBytes):   "",
		"\u200f":                            "U+200F",
	} {
		got := TextProblem(in, MaxNameBytes)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("TextProblem(%.40q) = %q, want %q", in, got, want)
		}
	}
	if got := Clip("h\u00e9llo", 2); got != "h..." {
		t.Errorf("Clip cut inside a rune: %q", got)
	}
}
