package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
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
	if err := c.decode(expanded); err != nil {
		return nameKeys(err, &doc)
	}
	return nil
}

// decode decodes the whole document strictly (unknown keys are errors) in
// one pass, so that yaml's errors keep their line numbers: into c, and
// engines.<name> into c.Engines[name]. The engines come from the registry,
// so the type decoded into is built at run time: a struct with c's fields
// inline and an engines field holding one field per engine, tagged with
// its name, pointing at its Settings.
func (c *Config) decode(doc []byte) error {
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
		return err
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
	return nil
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
	errTagged = regexp.MustCompile(`^cannot unmarshal (!!\w+)`)
)

// nameKeys rewrites yaml's "line N: ..." errors to name the key at line N
// (the expanded document keeps the original's layout), so that
// "cannot unmarshal !!str `soon` into time.Duration" says it is timeout.
// Where several keys share the line (slack: {bot_token: [x]}), the error
// picks the one: an unknown field by its name, a value that does not fit
// by its kind.
func nameKeys(err error, doc *yaml.Node) error {
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
		if f := errField.FindStringSubmatch(rest); f != nil {
			at = func(k, _ *yaml.Node) bool { return k != nil && k.Line == line && k.Value == f[1] }
		} else if t := errTagged.FindStringSubmatch(rest); t != nil {
			at = func(_, v *yaml.Node) bool { return v.Line == line && v.ShortTag() == t[1] }
		}
		if key := keyAt(doc, "", at); key != "" {
			msgs[i] = key + ": " + rest
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// keyAt returns the dotted path of the deepest mapping key or sequence
// item for which at(key, value) holds; key is nil for a sequence item.
func keyAt(n *yaml.Node, prefix string, at func(k, v *yaml.Node) bool) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if k := keyAt(c, prefix, at); k != "" {
				return k
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if deeper := keyAt(v, path, at); deeper != "" {
				return deeper
			}
			if at(k, v) {
				return path
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			if k := keyAt(c, path, at); k != "" {
				return k
			}
			if at(nil, c) {
				return path
			}
		}
	}
	return ""
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
