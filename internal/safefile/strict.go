package safefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NoDuplicateKeys checks that no JSON object in data holds the same key
// twice. encoding/json keeps the last of two and says nothing, so a file
// could show a reviewer one value and give synergy another; every file
// synergy reads as JSON (profiles, clusters, usage) is refused instead,
// naming the key by its path ("servers[2].cpus") and line. Data that is
// not JSON passes: the strict decode that follows names what is wrong.
func NoDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type level struct {
		obj  bool
		keys map[string]string // folded key -> the key as written
		key  string            // the current key (objects) ...
		idx  int               // ... or the next index (arrays)
		name string            // this level's own path
	}
	var stack []*level
	expectKey := func() bool {
		return len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].key == ""
	}
	// childPath is the path of the value about to start.
	childPath := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.obj {
			if top.name == "" {
				return top.key
			}
			return top.name + "." + top.key
		}
		return fmt.Sprintf("%s[%d]", top.name, top.idx)
	}
	// valueDone marks the end of one value in the enclosing level.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.obj {
			top.key = ""
		} else {
			top.idx++
		}
	}
	for {
		tok, err := dec.Token()
		off := dec.InputOffset() // just past tok
		if err != nil {
			return nil // the end, or not JSON: the decoder proper says what
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &level{obj: t == '{', keys: map[string]string{}, name: childPath()})
			case '}', ']':
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if expectKey() {
				top := stack[len(stack)-1]
				if first, seen := top.keys[foldKey(t)]; seen {
					line := bytes.Count(data[:min(int(off), len(data))], []byte{'\n'}) + 1
					where := top.name
					if where == "" {
						where = "the top-level object"
					}
					also := ""
					if first != t {
						also = fmt.Sprintf(" (as %s: keys match regardless of case)", strconv.Quote(Clip(first, 100)))
					}
					return fmt.Errorf("line %d: key %s appears twice in %s%s (a file must say each thing once)",
						line, strconv.Quote(Clip(t, 100)), where, also)
				}
				top.keys[foldKey(t)] = t
				top.key = t
				if t == "" {
					top.key = "\x00" // an empty key still takes a value
				}
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// foldKey is k as encoding/json matches it to a struct field: regardless
// of case (Unicode simple folding: "cpus", "CPUS" and "cPuS" fill one field,
// the last one read winning), each rune replaced by the smallest of its
// folding orbit.
func foldKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		f := r
		for c := unicode.SimpleFold(r); c != r; c = unicode.SimpleFold(c) {
			f = min(f, c)
		}
		b.WriteRune(f)
	}
	return b.String()
}

// MaxNameBytes bounds a name read from a file (a cluster, a server, a job):
// far above any real one, small enough to print.
const MaxNameBytes = 256

// TextProblem says what makes s unfit to show on a terminal or to stand
// for a name, or "" when it is fit: more than max bytes, a control
// character (ESC, CR, a newline: they move the cursor, recolour the
// terminal, forge lines), or a bidirectional-override character (U+202A..E,
// U+2066..9, U+200E/F, U+061C: they reorder what is shown, so that one name
// reads as another).
func TextProblem(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("is %d bytes long, more than %d", len(s), max)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("holds a control character (%U)", r)
	}
	if i := strings.IndexFunc(s, IsBidi); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("holds a bidirectional-text control (%U), which reorders what a terminal shows", r)
	}
	return ""
}

// IsBidi reports whether r is a bidirectional-text control (U+061C,
// U+200E/F, U+202A..E, U+2066..9): it reorders what a terminal shows.
func IsBidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Clip cuts s to at most n bytes (on a rune boundary), marking the cut
// with "...", for messages that quote what a file held.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
