package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/golem-chat/golem/engine"
)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// parse decodes YAML over c. Expansion happens on the parsed scalars, not
// the raw text, so an environment value can never inject YAML.
func (c *Config) parse(raw []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil // empty file: defaults
	}
	if err := checkEngineNames(&doc); err != nil {
		return err
	}
	c.expanded = map[string]string{}
	expandScalars(&doc, "", c.expanded)
	expanded, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	if root, err := c.decode(expanded); err != nil {
		return nameKeys(err, &doc, root)
	}
	return nil
}

// decode decodes the whole document strictly (unknown keys are errors) in
// one pass, so that yaml's errors keep their line numbers: into c, and
// engines.<name> into c.Engines[name]. The engines come from the registry,
// so the type decoded into is built at run time: a struct with c's fields
// inline and an engines field holding one field per engine, tagged with
// its name, pointing at its Settings. It returns that type, for errors to
// name what each section takes.
func (c *Config) decode(doc []byte) (reflect.Type, error) {
	specs := engine.Engines()
	engineFields := make([]reflect.StructField, len(specs))
	for i, s := range specs {
		if c.Engines[s.Name] == nil {
			c.Engines[s.Name] = s.NewSettings()
		}
		engineFields[i] = reflect.StructField{
			Name: fmt.Sprintf("Engine%d", i),
			Type: reflect.TypeOf(c.Engines[s.Name]),
			Tag:  reflect.StructTag(fmt.Sprintf("yaml:%q", s.Name)),
		}
	}
	enginesType := reflect.StructOf(engineFields)
	docType := reflect.StructOf([]reflect.StructField{
		{Name: "Config", Type: reflect.TypeOf(Config{}), Tag: `yaml:",inline"`},
		{Name: "Engines", Type: enginesType, Tag: `yaml:"engines"`},
	})
	v := reflect.New(docType).Elem()
	v.Field(0).Set(reflect.ValueOf(*c))
	for i, s := range specs {
		v.Field(1).Field(i).Set(reflect.ValueOf(c.Engines[s.Name]))
	}

	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(v.Addr().Interface()); err != nil {
		return docType, err
	}
	engines := c.Engines
	*c = v.Field(0).Interface().(Config)
	c.Engines = engines
	for i, s := range specs {
		if set, ok := v.Field(1).Field(i).Interface().(engine.Settings); ok && !reflect.ValueOf(set).IsNil() {
			c.Engines[s.Name] = set
		} else {
			c.Engines[s.Name] = s.NewSettings() // "cursor:" with nothing: the defaults
		}
	}
	return docType, nil
}

// checkEngineNames names a key under engines: that is no engine of the
// registry, which yaml would otherwise report as a field of a type it
// built at run time.
func checkEngineNames(doc *yaml.Node) error {
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil // yaml's own error follows
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "engines" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		m := root.Content[i+1]
		for j := 0; j+1 < len(m.Content); j += 2 {
			name := m.Content[j].Value
			if _, ok := engine.Find(name); !ok {
				return fmt.Errorf("engines.%s: %q is not %s", name, name, engine.NamesText())
			}
		}
	}
	return nil
}

var (
	errLine   = regexp.MustCompile(`^line (\d+): `)
	errField  = regexp.MustCompile(`^field (\S+) not found`)
	errTagged = regexp.MustCompile(`^cannot unmarshal (!!\w+)(?: ` + "`" + `(.*)` + "`" + `)? into (\S+)`)
)

// nameKeys rewrites yaml's "line N: ..." errors as a person reads them:
// the line, the key's path (the expanded document keeps the original's
// layout; in flow style, where many keys share a line, the error picks
// the one: an unknown key by its name, a value that does not fit by its
// kind), and what is allowed there — the keys of that section for an
// unknown key, the kind of value for one that does not fit — instead of
// the Go types yaml names. root is the type the document decodes into.
func nameKeys(err error, doc *yaml.Node, root reflect.Type) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		msgs[i] = e
		m := errLine.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		rest := strings.TrimPrefix(e, m[0])
		at := func(k, v *yaml.Node) bool { return k != nil && k.Line == line || v.Line == line }
		explain := func(reflect.Type) string { return rest }
		if f := errField.FindStringSubmatch(rest); f != nil {
			at = func(k, _ *yaml.Node) bool { return k != nil && k.Line == line && k.Value == f[1] }
			explain = func(parent reflect.Type) string {
				keys := keysOf(parent)
				if len(keys) == 0 {
					return "unknown key " + strconv.Quote(f[1])
				}
				msg := "unknown key " + strconv.Quote(f[1])
				if near := closest(f[1], keys); near != "" {
					msg += " (did you mean " + near + "?)"
				}
				return msg + "; allowed here: " + strings.Join(keys, ", ")
			}
		} else if t := errTagged.FindStringSubmatch(rest); t != nil {
			at = func(_, v *yaml.Node) bool { return v.Line == line && v.ShortTag() == t[1] }
			explain = func(reflect.Type) string { return notFit(t[1], t[2], t[3], rest) }
		}
		if key, parent := keyAt(doc, root, "", at); key != "" {
			msgs[i] = fmt.Sprintf("line %d: %s: %s", line, key, explain(parent))
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// closest is the key of keys nearest to word, a typo of it (at most two
// edits away and not the whole word), or "".
func closest(word string, keys []string) string {
	best, bestDist := "", 3
	for _, k := range keys {
		if d := editDistance(word, k); d < bestDist && d < len(k) {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// notFit says what a value of yaml tag tag (and text value, for a scalar)
// should have been for a Go type named goType; other is yaml's own words.
func notFit(tag, value, goType, other string) string {
	got := map[string]string{"!!seq": "a list", "!!map": "a section of keys", "!!str": "a text", "!!int": "a number",
		"!!bool": "true or false", "!!float": "a number", "!!null": "nothing"}[tag]
	if value != "" {
		got = "`" + value + "`"
	}
	want := ""
	switch {
	case goType == "time.Duration":
		want = "a duration such as 30s, 10m or 1h"
	case strings.HasPrefix(goType, "[]"):
		want = "a list"
	case strings.HasPrefix(goType, "map["):
		want = "a section of keys"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint") || strings.HasPrefix(goType, "float"):
		want = "a number"
	case goType == "bool":
		want = "true or false"
	case goType == "string" || strings.HasSuffix(goType, ".Scope") || strings.HasSuffix(goType, ".Mode") || strings.HasSuffix(goType, ".Busy"):
		want = "one value (a text)"
	}
	if got == "" || want == "" {
		return other
	}
	return got + " is not allowed here; give " + want
}

// keysOf lists the keys a section decoded into t takes, sorted; none for
// a type that is not a struct.
func keysOf(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-":
		case strings.Contains(opts, "inline"):
			keys = append(keys, keysOf(f.Type)...)
		case f.IsExported():
			keys = append(keys, cmp.Or(name, strings.ToLower(f.Name)))
		}
	}
	slices.Sort(keys)
	return keys
}

// fieldType is the type a key of a section of type t decodes into, nil
// when t takes no such key.
func fieldType(t reflect.Type, key string) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(opts, "inline") {
				if ft := fieldType(f.Type, key); ft != nil {
					return ft
				}
				continue
			}
			if f.IsExported() && name != "-" && cmp.Or(name, strings.ToLower(f.Name)) == key {
				return f.Type
			}
		}
	}
	return nil
}

// elemType is the type of a list item of type t, nil when t is no list.
func elemType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
		return nil
	}
	return t.Elem()
}

// keyAt returns the dotted path of the deepest mapping key or sequence
// item for which at(key, value) holds (key is nil for a sequence item), and
// the type of the section holding it; n decodes into t (nil: unknown).
func keyAt(n *yaml.Node, t reflect.Type, prefix string, at func(k, v *yaml.Node) bool) (string, reflect.Type) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if k, p := keyAt(c, t, prefix, at); k != "" {
				return k, p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if deeper, p := keyAt(v, fieldType(t, k.Value), path, at); deeper != "" {
				return deeper, p
			}
			if at(k, v) {
				return path, t
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			if k, p := keyAt(c, elemType(t), path, at); k != "" {
				return k, p
			}
			if at(nil, c) {
				return path, t
			}
		}
	}
	return "", nil
}

// expandScalars replaces each ${VAR} in n's scalars by the variable's
// value, and records in seen each variable with the key it was first found
// at ("slack.bot_token").
func expandScalars(n *yaml.Node, path string, seen map[string]string) {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			name := ref[2 : len(ref)-1]
			if _, ok := seen[name]; !ok {
				seen[name] = path
			}
			return os.Getenv(name)
		})
		if n.Value == "" {
			n.Tag = "!!str" // an unset ${VAR} is an empty string, not null
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			expandScalars(k, path, seen)
			expandScalars(v, sub, seen)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandScalars(c, fmt.Sprintf("%s[%d]", path, i), seen)
		}
	default:
		for _, k := range n.Content {
			expandScalars(k, path, seen)
		}
	}
}
