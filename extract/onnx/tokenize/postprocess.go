package tokenize

import (
	"encoding/json"
	"fmt"
)

// postProcessor is the single-sequence template of a tokenizer.json
// post_processor: prefix tokens, the content with its type id, suffix tokens.
type postProcessor struct {
	prefixIDs, prefixTypes []int64
	seqType                int64
	suffixIDs, suffixTypes []int64
}

func (p postProcessor) added() int { return len(p.prefixIDs) + len(p.suffixIDs) }

func (p postProcessor) ids() []int {
	var out []int
	for _, id := range p.prefixIDs {
		out = append(out, int(id))
	}
	for _, id := range p.suffixIDs {
		out = append(out, int(id))
	}
	return out
}

func (p postProcessor) apply(content []int64) (ids, types []int64) {
	n := p.added() + len(content)
	ids = make([]int64, 0, n)
	types = make([]int64, 0, n)
	ids = append(ids, p.prefixIDs...)
	types = append(types, p.prefixTypes...)
	ids = append(ids, content...)
	for range content {
		types = append(types, p.seqType)
	}
	ids = append(ids, p.suffixIDs...)
	types = append(types, p.suffixTypes...)
	return ids, types
}

type postJSON struct {
	Type    string            `json:"type"`
	Sep     []json.RawMessage `json:"sep"`
	Cls     []json.RawMessage `json:"cls"`
	Single  []templatePiece   `json:"single"`
	Special map[string]struct {
		IDs []int64 `json:"ids"`
	} `json:"special_tokens"`
	Processors []json.RawMessage `json:"processors"`
}

type templatePiece struct {
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int64  `json:"type_id"`
	} `json:"Sequence"`
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int64  `json:"type_id"`
	} `json:"SpecialToken"`
}

func buildPostProcessor(raw json.RawMessage) (postProcessor, error) {
	var p postProcessor
	if isNull(raw) {
		return p, nil
	}
	var j postJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return p, fmt.Errorf("post_processor: %w", err)
	}
	switch j.Type {
	case "BertProcessing", "RobertaProcessing":
		cls, err := postToken(j.Cls)
		if err != nil {
			return p, fmt.Errorf("post_processor %s cls: %w", j.Type, err)
		}
		sep, err := postToken(j.Sep)
		if err != nil {
			return p, fmt.Errorf("post_processor %s sep: %w", j.Type, err)
		}
		p.prefixIDs, p.prefixTypes = []int64{cls}, []int64{0}
		p.suffixIDs, p.suffixTypes = []int64{sep}, []int64{0}
		return p, nil
	case "ByteLevel":
		return p, nil // only changes offsets
	case "TemplateProcessing":
		seen := false
		for _, piece := range j.Single {
			switch {
			case piece.Sequence != nil:
				if seen {
					return p, fmt.Errorf("post_processor TemplateProcessing: sequence appears twice")
				}
				seen = true
				p.seqType = piece.Sequence.TypeID
			case piece.SpecialToken != nil:
				st, ok := j.Special[piece.SpecialToken.ID]
				if !ok {
					return p, fmt.Errorf("post_processor TemplateProcessing: unknown special token %q", piece.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if seen {
						p.suffixIDs = append(p.suffixIDs, id)
						p.suffixTypes = append(p.suffixTypes, piece.SpecialToken.TypeID)
					} else {
						p.prefixIDs = append(p.prefixIDs, id)
						p.prefixTypes = append(p.prefixTypes, piece.SpecialToken.TypeID)
					}
				}
			default:
				return p, fmt.Errorf("post_processor TemplateProcessing: unknown template piece")
			}
		}
		if !seen {
			return p, fmt.Errorf("post_processor TemplateProcessing: single template has no sequence")
		}
		return p, nil
	case "Sequence":
		// Each processor wraps the output of the previous one.
		for _, sub := range j.Processors {
			q, err := buildPostProcessor(sub)
			if err != nil {
				return p, err
			}
			p = compose(p, q)
		}
		return p, nil
	default:
		return p, fmt.Errorf("unsupported post_processor type %q", j.Type)
	}
}

// compose returns the processor that applies inner, then outer.
func compose(inner, outer postProcessor) postProcessor {
	var c postProcessor
	c.prefixIDs = append(append(c.prefixIDs, outer.prefixIDs...), inner.prefixIDs...)
	c.prefixTypes = append(append(c.prefixTypes, outer.prefixTypes...), inner.prefixTypes...)
	c.seqType = inner.seqType
	if outer.seqType != 0 {
		c.seqType = outer.seqType
	}
	c.suffixIDs = append(append(c.suffixIDs, inner.suffixIDs...), outer.suffixIDs...)
	c.suffixTypes = append(append(c.suffixTypes, inner.suffixTypes...), outer.suffixTypes...)
	return c
}

// postToken reads ["[CLS]", 101].
func postToken(raw []json.RawMessage) (int64, error) {
	if len(raw) != 2 {
		return 0, fmt.Errorf("want [token, id], got %d elements", len(raw))
	}
	var id int64
	if err := json.Unmarshal(raw[1], &id); err != nil {
		return 0, fmt.Errorf("token id: %w", err)
	}
	return id, nil
}
