package web

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Body is a stored body as the detail page shows it.
type Body struct {
	Kind   string // "json", "text", "binary", "empty" or "swept"
	Raw    string // the bytes as text (json, text), cut at maxShown
	Pretty string // json: indented
	Tree   *Node  // json: folded, nil when too big to unfold
	Hex    string // binary: a hex dump, cut at maxHex
	Cut    bool   // Raw or Hex holds only the start of the body
	Size   int
}

const (
	maxShown = 1 << 20   // bytes of text shown
	maxTree  = 256 << 10 // bodies up to this size unfold as a tree
	maxHex   = 64 << 10  // bytes of a binary body dumped
)

// NewBody is the view of body (swept: removed by retention).
func NewBody(body []byte, swept bool) Body {
	b := Body{Size: len(body)}
	switch {
	case swept:
		b.Kind = "swept"
		return b
	case len(body) == 0:
		b.Kind = "empty"
		return b
	case !utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0:
		b.Kind = "binary"
		shown := body
		if len(shown) > maxHex {
			shown, b.Cut = shown[:maxHex], true
		}
		b.Hex = hex.Dump(shown)
		return b
	}
	b.Kind, b.Raw = "text", string(body)
	if len(b.Raw) > maxShown {
		b.Raw, b.Cut = strings.ToValidUTF8(b.Raw[:maxShown], ""), true
	}
	if json.Valid(body) {
		b.Kind = "json"
		var buf bytes.Buffer
		if json.Indent(&buf, body, "", "  ") == nil {
			b.Pretty = buf.String()
		}
		if len(body) <= maxTree {
			b.Tree, _ = parseTree(body)
		}
	}
	return b
}

// Node is one value of a JSON body, in the order the body has them.
type Node struct {
	Key      string // the member's name in its object
	InObject bool   // Key is a name (it may be "")
	Kind     string // "object", "array", "string", "number", "bool", "null"
	Value    string // a scalar as JSON writes it
	Children []*Node
	Open     bool // unfolded at first: the outer levels
}

// Count is how many members or elements n has, for a folded line.
func (n *Node) Count() string {
	noun := "item"
	if n.Kind == "object" {
		noun = "key"
	}
	if len(n.Children) != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s", len(n.Children), noun)
}

// parseTree reads body into nodes, keeping the members' order.
func parseTree(body []byte) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	n, err := readNode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	return n, nil
}

func readNode(dec *json.Decoder, depth int) (*Node, error) {
	if depth > 100 {
		return nil, errors.New("nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	n := &Node{Open: depth < 3}
	switch t := tok.(type) {
	case json.Delim:
		n.Kind = "array"
		if t == '{' {
			n.Kind = "object"
		}
		for dec.More() {
			var key string
			if n.Kind == "object" {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ = k.(string)
			}
			c, err := readNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			c.Key, c.InObject = key, n.Kind == "object"
			n.Children = append(n.Children, c)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		b, _ := json.Marshal(t)
		n.Kind, n.Value = "string", string(b)
	case json.Number:
		n.Kind, n.Value = "number", t.String()
	case bool:
		n.Kind, n.Value = "bool", fmt.Sprint(t)
	case nil:
		n.Kind, n.Value = "null", "null"
	}
	return n, nil
}

// DiffLine is one line of a diff: Op is ' ', '+' or '-'; a run of
// unchanged lines left out is one line with Op '~' saying how many.
type DiffLine struct {
	Op   string
	Text string
}

// maxDiffLines bounds each side of a diff (the table is their product).
const maxDiffLines = 2000

// diffContext is how many unchanged lines stay around a change.
const diffContext = 3

// Diff is the line diff from a to b (their pretty forms where JSON), or
// an error when either is too long to compare.
func Diff(a, b Body) ([]DiffLine, error) {
	la, lb := diffLines(a), diffLines(b)
	if len(la) > maxDiffLines || len(lb) > maxDiffLines {
		return nil, fmt.Errorf("over %d lines: too long to compare here", maxDiffLines)
	}
	// Longest common subsequence, from the ends.
	n, m := len(la), len(lb)
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) *int32 { return &lcs[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if la[i] == lb[j] {
				*at(i, j) = *at(i+1, j+1) + 1
			} else {
				*at(i, j) = max(*at(i+1, j), *at(i, j+1))
			}
		}
	}
	var all []DiffLine
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && la[i] == lb[j]:
			all = append(all, DiffLine{" ", la[i]})
			i, j = i+1, j+1
		case i < n && (j == m || *at(i+1, j) >= *at(i, j+1)):
			all = append(all, DiffLine{"-", la[i]})
			i++
		default:
			all = append(all, DiffLine{"+", lb[j]})
			j++
		}
	}
	// Fold the unchanged runs far from a change.
	keep := make([]bool, len(all))
	for k, l := range all {
		if l.Op != " " {
			for c := max(0, k-diffContext); c <= min(len(all)-1, k+diffContext); c++ {
				keep[c] = true
			}
		}
	}
	var out []DiffLine
	for k := 0; k < len(all); {
		if keep[k] {
			out = append(out, all[k])
			k++
			continue
		}
		s := k
		for k < len(all) && !keep[k] {
			k++
		}
		out = append(out, DiffLine{"~", fmt.Sprintf("%d unchanged lines", k-s)})
	}
	return out, nil
}

func diffLines(b Body) []string {
	s := b.Raw
	switch {
	case b.Pretty != "":
		s = b.Pretty
	case b.Kind == "binary":
		s = b.Hex
	}
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
