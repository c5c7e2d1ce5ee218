package tfjs

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// TensorFlow DataType enum values used by the supported graphs.
const (
	dtFloat = 1
	dtInt32 = 3
	dtInt64 = 9
	dtBool  = 10
)

// GraphModel is a loaded TF.js graph model: its nodes in file order and the
// values of its constants.
type GraphModel struct {
	Nodes  []Node
	consts map[string]constant
}

// Node is one TensorFlow op of the graph.
type Node struct {
	Name   string
	Op     string
	Inputs []string
	Attr   map[string]attrValue
}

type attrValue struct {
	I    *json.Number `json:"i"`
	F    *float64     `json:"f"`
	B    *bool        `json:"b"`
	S    []byte       `json:"-"`
	Type *int         `json:"-"`
	List *struct {
		I []json.Number `json:"i"`
	} `json:"list"`
	raw map[string]json.RawMessage
}

// UnmarshalJSON reads the tfjs attribute encoding: "s" is a list of bytes,
// "type" a DataType number or its DT_* name.
func (a *attrValue) UnmarshalJSON(data []byte) error {
	type plain attrValue
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*a = attrValue(p)
	if err := json.Unmarshal(data, &a.raw); err != nil {
		return err
	}
	if s, ok := a.raw["s"]; ok {
		var bs []int
		if err := json.Unmarshal(s, &bs); err == nil {
			a.S = make([]byte, len(bs))
			for i, b := range bs {
				a.S[i] = byte(b)
			}
		} else {
			var str string
			if err := json.Unmarshal(s, &str); err != nil {
				return fmt.Errorf("attribute s: %w", err)
			}
			a.S = []byte(str)
		}
	}
	if t, ok := a.raw["type"]; ok {
		v, err := parseDType(t)
		if err != nil {
			return err
		}
		a.Type = &v
	}
	return nil
}

func parseDType(raw json.RawMessage) (int, error) {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("data type %s: %w", raw, err)
	}
	switch s {
	case "DT_FLOAT":
		return dtFloat, nil
	case "DT_INT32":
		return dtInt32, nil
	case "DT_INT64":
		return dtInt64, nil
	case "DT_BOOL":
		return dtBool, nil
	}
	return 0, fmt.Errorf("unsupported data type %s", s)
}

// constant is a Const node's value: floats for DT_FLOAT, ints otherwise.
type constant struct {
	dtype  int
	dims   []int64
	floats []float32
	ints   []int64
}

type modelJSON struct {
	Format        string `json:"format"`
	ModelTopology struct {
		Node []struct {
			Name  string               `json:"name"`
			Op    string               `json:"op"`
			Input []string             `json:"input"`
			Attr  map[string]attrValue `json:"attr"`
		} `json:"node"`
	} `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string          `json:"name"`
			Shape        []int64         `json:"shape"`
			DType        string          `json:"dtype"`
			Quantization json.RawMessage `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// LoadGraphModel reads dir/model.json and its weight shards. Errors name the
// file.
func LoadGraphModel(dir string) (*GraphModel, error) {
	path := filepath.Join(dir, "model.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tfjs: %w", err)
	}
	return parseGraphModel(path, data, func(p string) ([]byte, error) {
		if filepath.Base(p) != p {
			return nil, fmt.Errorf("tfjs: %s: weight path %q must be a file next to model.json", path, p)
		}
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return nil, fmt.Errorf("tfjs: %w", err)
		}
		return b, nil
	})
}

// parseGraphModel parses model.json (read from path, for messages);
// shard returns a weight file's bytes by its manifest path.
func parseGraphModel(path string, data []byte, shard func(string) ([]byte, error)) (*GraphModel, error) {
	var mj modelJSON
	if err := json.Unmarshal(data, &mj); err != nil {
		return nil, fmt.Errorf("tfjs: %s: %w", path, err)
	}
	if len(mj.ModelTopology.Node) == 0 {
		return nil, fmt.Errorf("tfjs: %s: not a graph model (no modelTopology.node)", path)
	}
	g := &GraphModel{consts: map[string]constant{}}
	for _, n := range mj.ModelTopology.Node {
		g.Nodes = append(g.Nodes, Node{Name: n.Name, Op: n.Op, Inputs: n.Input, Attr: n.Attr})
	}
	// Const node dtypes: the converter stores int64 constants as int32
	// weights, so the node's own dtype attribute decides.
	constType := map[string]int{}
	for _, n := range g.Nodes {
		if n.Op == "Const" {
			if a, ok := n.Attr["dtype"]; ok && a.Type != nil {
				constType[n.Name] = *a.Type
			}
		}
	}
	for gi, group := range mj.WeightsManifest {
		var buf []byte
		for _, p := range group.Paths {
			b, err := shard(p)
			if err != nil {
				return nil, err
			}
			buf = append(buf, b...)
		}
		off := 0
		for _, w := range group.Weights {
			if len(w.Quantization) > 0 && string(w.Quantization) != "null" {
				return nil, fmt.Errorf("tfjs: %s: weight %s is quantised; not supported", path, w.Name)
			}
			n := int64(1)
			for _, d := range w.Shape {
				if d < 0 || (d > 0 && n > math.MaxInt32/d) {
					return nil, fmt.Errorf("tfjs: %s: weight %s has shape %v", path, w.Name, w.Shape)
				}
				n *= d
			}
			if n > math.MaxInt32 || off+int(n)*4 > len(buf) {
				return nil, fmt.Errorf("tfjs: %s: weight group %d is shorter than its manifest (weight %s)", path, gi, w.Name)
			}
			c := constant{dims: w.Shape}
			raw := buf[off : off+int(n)*4]
			off += int(n) * 4
			switch w.DType {
			case "float32":
				c.dtype = dtFloat
				c.floats = make([]float32, n)
				for i := range c.floats {
					c.floats[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				}
			case "int32":
				c.dtype = dtInt32
				c.ints = make([]int64, n)
				for i := range c.ints {
					c.ints[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
				}
			default:
				return nil, fmt.Errorf("tfjs: %s: weight %s has unsupported dtype %s", path, w.Name, w.DType)
			}
			if t, ok := constType[w.Name]; ok && t != c.dtype {
				if c.dtype != dtInt32 || (t != dtInt64 && t != dtBool) {
					return nil, fmt.Errorf("tfjs: %s: weight %s is %s but its node says type %d", path, w.Name, w.DType, t)
				}
				c.dtype = t
			}
			g.consts[w.Name] = c
		}
		if off != len(buf) {
			return nil, fmt.Errorf("tfjs: %s: weight group %d has %d bytes, its manifest describes %d", path, gi, len(buf), off)
		}
	}
	for _, n := range g.Nodes {
		if n.Op == "Const" {
			if _, ok := g.consts[n.Name]; !ok {
				return nil, fmt.Errorf("tfjs: %s: constant %s has no weight", path, n.Name)
			}
		}
	}
	return g, nil
}

func (a attrValue) int() (int64, bool) {
	if a.I == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(a.I.String(), 10, 64)
	return v, err == nil
}

func (a attrValue) ints() []int64 {
	if a.List == nil {
		return nil
	}
	out := make([]int64, 0, len(a.List.I))
	for _, s := range a.List.I {
		v, _ := strconv.ParseInt(s.String(), 10, 64)
		out = append(out, v)
	}
	return out
}
