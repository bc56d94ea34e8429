package synthtrain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The audio preset: long 16-bit mono PCM WAV clips, of which the loader reads
// every byte but does little arithmetic, so that it is bound by how fast the
// files can be fetched when they are not in the page cache.
const (
	audioRateHz    = 16000
	audioMinBytes  = 1 << 20
	audioMaxBytes  = 2 << 20
	audioHeader    = 44
	audioFrames    = 64 // energy frames per clip
	audioSubsample = 4  // the feature pass reads every 4th sample
)

type audioCodec struct{}

// tensorLen: per frame a log-energy and a zero-crossing rate.
func (audioCodec) tensorLen() int { return 2 * audioFrames }

// generate writes a WAV clip of 1–2 MiB: three drifting tones under an
// envelope plus white noise.
func (audioCodec) generate(seed uint64, idx int) ([]byte, error) {
	r := newRNG(seed, 2, uint64(idx))
	size := r.between(audioMinBytes, audioMaxBytes) &^ 1
	n := (size - audioHeader) / 2
	buf := make([]byte, audioHeader+2*n)
	putWAVHeader(buf, n)
	type tone struct{ s1, s2, k, amp float64 }
	var tones [3]tone
	for i := range tones {
		w := 2 * math.Pi * float64(r.between(80, 4000)) / audioRateHz
		tones[i] = tone{s1: 0, s2: -math.Sin(w), k: 2 * math.Cos(w), amp: 800 + 4000*r.float()}
	}
	envPeriod := r.between(audioRateHz/4, 2*audioRateHz)
	pcm := buf[audioHeader:]
	var noise uint64
	for i := range n {
		if i&3 == 0 {
			noise = r.next()
		}
		v := float64(int16(noise)) / 16
		noise >>= 16
		env := 0.5 + 0.5*float64(i%envPeriod)/float64(envPeriod)
		for t := range tones {
			s := tones[t].k*tones[t].s1 - tones[t].s2 // sin recurrence
			tones[t].s2, tones[t].s1 = tones[t].s1, s
			v += env * tones[t].amp * s
		}
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(math.Max(-32768, math.Min(32767, v)))))
	}
	return buf, nil
}

func putWAVHeader(b []byte, samples int) {
	le := binary.LittleEndian
	copy(b[0:], "RIFF")
	le.PutUint32(b[4:], uint32(36+2*samples))
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16)
	le.PutUint16(b[20:], 1) // PCM
	le.PutUint16(b[22:], 1) // mono
	le.PutUint32(b[24:], audioRateHz)
	le.PutUint32(b[28:], 2*audioRateHz)
	le.PutUint16(b[32:], 2)
	le.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	le.PutUint32(b[40:], uint32(2*samples))
}

// pcmOf checks a canonical 16-bit mono WAV header and returns its samples.
func pcmOf(b []byte) ([]byte, error) {
	le := binary.LittleEndian
	if len(b) < audioHeader || string(b[0:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" {
		return nil, errors.New("not a canonical WAV file")
	}
	if le.Uint16(b[20:]) != 1 || le.Uint16(b[34:]) != 16 {
		return nil, errors.New("not 16-bit PCM")
	}
	n := int(le.Uint32(b[40:]))
	if n > len(b)-audioHeader {
		return nil, fmt.Errorf("data chunk says %d bytes, file holds %d", n, len(b)-audioHeader)
	}
	return b[audioHeader : audioHeader+n], nil
}

// process computes, over a subsample, each frame's log energy and
// zero-crossing rate: a light pass over data the loader read in full.
func (audioCodec) process(data []byte, _ *rng, dst []float32) error {
	pcm, err := pcmOf(data)
	if err != nil {
		return err
	}
	n := len(pcm) / 2
	frame := n / audioFrames
	if frame < audioSubsample {
		return fmt.Errorf("clip of %d samples is too short", n)
	}
	for f := range audioFrames {
		var energy float64
		crossings, prev := 0, int16(0)
		for i := f * frame; i < (f+1)*frame; i += audioSubsample {
			s := int16(binary.LittleEndian.Uint16(pcm[2*i:]))
			energy += float64(s) * float64(s)
			if (s < 0) != (prev < 0) {
				crossings++
			}
			prev = s
		}
		dst[f] = float32(math.Log1p(energy / float64(frame/audioSubsample)))
		dst[audioFrames+f] = float32(crossings) / float32(frame/audioSubsample)
	}
	return nil
}
