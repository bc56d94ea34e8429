package synthtrain

import (
	"encoding/binary"
	"fmt"
)

// The language preset: short token files (little-endian uint16 token ids)
// that cost next to nothing to load, so the GPU step dominates.
const (
	langVocab     = 32000
	langMinTokens = 1024
	langMaxTokens = 4096
	langSeqLen    = 2048
)

type languageCodec struct{}

func (languageCodec) tensorLen() int { return langSeqLen }

// generate writes 1024–4096 tokens with a skewed (roughly Zipf-like)
// distribution over the vocabulary.
func (languageCodec) generate(seed uint64, idx int) ([]byte, error) {
	r := newRNG(seed, 3, uint64(idx))
	n := r.between(langMinTokens, langMaxTokens)
	b := make([]byte, 2*n)
	for i := range n {
		u := r.float()
		binary.LittleEndian.PutUint16(b[2*i:], uint16(u*u*u*langVocab))
	}
	return b, nil
}

// process truncates or pads the token ids to the sequence length.
func (languageCodec) process(data []byte, _ *rng, dst []float32) error {
	if len(data)%2 != 0 {
		return fmt.Errorf("token file of %d bytes is not whole uint16 tokens", len(data))
	}
	n := min(len(data)/2, langSeqLen)
	for i := range n {
		dst[i] = float32(binary.LittleEndian.Uint16(data[2*i:]))
	}
	clear(dst[n:])
	return nil
}
