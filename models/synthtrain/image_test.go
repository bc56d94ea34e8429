package synthtrain

import (
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// gray returns a 4:2:0 YCbCr image whose luma is f(x, y) and chroma neutral,
// so every RGB channel equals the luma.
func gray(w, h int, f func(x, y int) uint8) *image.YCbCr {
	m := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := range h {
		for x := range w {
			m.Y[m.YOffset(x, y)] = f(x, y)
			m.Cb[m.COffset(x, y)], m.Cr[m.COffset(x, y)] = 128, 128
		}
	}
	return m
}

// normalised is what a grey level v becomes in channel c.
func normalised(v float32, c int) float32 {
	mean, std := imageNorm()
	return (v/255 - mean[c]) / std[c]
}

func TestResizeInto(t *testing.T) {
	n := imageOutSide
	dst := make([]float32, 3*n*n)
	const tol = 1e-4

	// A uniform image stays uniform at every size and crop: value 100 in
	// channel 0 is (100/255 − 0.485) / 0.229 ≈ −0.4054.
	resizeInto(gray(300, 200, func(x, y int) uint8 { return 100 }), image.Rect(10, 20, 110, 170), false, dst)
	for c := range 3 {
		want := normalised(100, c)
		for i, v := range dst[c*n*n : (c+1)*n*n] {
			if math.Abs(float64(v-want)) > tol {
				t.Fatalf("uniform: channel %d pixel %d = %v, want %v", c, i, v, want)
			}
		}
	}

	// A left-to-right ramp over a 2×-wide crop: rows rise, and the flipped
	// output is each row reversed.
	ramp := gray(2*n, n, func(x, y int) uint8 { return uint8(x / 2) })
	crop := image.Rect(0, 0, 2*n, n)
	plain := make([]float32, 3*n*n)
	resizeInto(ramp, crop, false, plain)
	flipped := make([]float32, 3*n*n)
	resizeInto(ramp, crop, true, flipped)
	for c := range 3 {
		for y := range n {
			row := plain[c*n*n+y*n : c*n*n+(y+1)*n]
			frow := slices.Clone(flipped[c*n*n+y*n : c*n*n+(y+1)*n])
			if !slices.IsSorted(row) || row[0] >= row[n-1] {
				t.Fatalf("ramp: channel %d row %d not rising: %v … %v", c, y, row[0], row[n-1])
			}
			slices.Reverse(frow)
			if !slices.Equal(row, frow) {
				t.Fatalf("flip: channel %d row %d is not the reversed row", c, y)
			}
		}
	}
	// Ends of the ramp (luma x/2): output column 0 samples source
	// x = (0+0.5)·448/224 − 0.5 = 0.5, between lumas 0 and 0: 0; column 223
	// samples x = 446.5, between lumas 223 and 223: 223.
	if got, want := plain[0], normalised(0, 0); math.Abs(float64(got-want)) > tol {
		t.Errorf("ramp first pixel %v, want %v", got, want)
	}
	if got, want := plain[n-1], normalised(223, 0); math.Abs(float64(got-want)) > tol {
		t.Errorf("ramp last pixel %v, want %v", got, want)
	}

	// The generic path (a non-YCbCr image) agrees with the YCbCr one.
	rgba := image.NewRGBA(ramp.Bounds())
	for y := range n {
		for x := range 2 * n {
			v := uint8(x / 2)
			rgba.SetRGBA(x, y, color.RGBA{v, v, v, 255})
		}
	}
	generic := make([]float32, 3*n*n)
	resizeInto(rgba, crop, false, generic)
	for i := range generic {
		if math.Abs(float64(generic[i]-plain[i])) > 0.01 {
			t.Fatalf("generic path pixel %d = %v, YCbCr path %v", i, generic[i], plain[i])
		}
	}
}

func TestRandomCrop_InBoundsAndVaried(t *testing.T) {
	r := newRNG(5)
	areas := map[int]bool{}
	for range 1000 {
		x, y, w, h := randomCrop(&r, imageWidth, imageHeight)
		if x < 0 || y < 0 || w < 1 || h < 1 || x+w > imageWidth || y+h > imageHeight {
			t.Fatalf("crop (%d,%d) %dx%d outside %dx%d", x, y, w, h, imageWidth, imageHeight)
		}
		if a := float64(w*h) / (imageWidth * imageHeight); a < 0.34 || a > 1.0 {
			t.Fatalf("crop area %.2f of the image, want 0.35–1", a)
		}
		areas[w*h/1000] = true
	}
	if len(areas) < 20 {
		t.Errorf("only %d distinct crop areas in 1000 draws", len(areas))
	}
}

func TestImageProcess_DeterministicAndNormalised(t *testing.T) {
	c := imageCodec{}
	data, err := c.generate(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, c.tensorLen()), make([]float32, c.tensorLen())
	r1, r2 := newRNG(9, 1), newRNG(9, 1)
	if err := c.process(data, &r1, a); err != nil {
		t.Fatal(err)
	}
	if err := c.process(data, &r2, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("same augmentation seed, different tensors")
	}
	// Normalised range: (0 − 0.485)/0.229 ≈ −2.118 to (1 − 0.406)/0.225 ≈ 2.640.
	lo, hi := slices.Min(a), slices.Max(a)
	if lo < -2.12 || hi > 2.641 || hi-lo < 1 {
		t.Errorf("values span [%v, %v], want within [-2.12, 2.641] and not flat", lo, hi)
	}
	r3 := newRNG(9, 2)
	if err := c.process(data, &r3, b); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a, b) {
		t.Error("different augmentation seeds gave identical tensors")
	}
	if err := c.process([]byte("not a jpeg"), &r3, b); err == nil {
		t.Error("garbage decoded without error")
	}
}

func TestAudioProcess(t *testing.T) {
	c := audioCodec{}
	data, err := c.generate(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, c.tensorLen())
	if err := c.process(data, nil, dst); err != nil {
		t.Fatal(err)
	}
	for f := range audioFrames {
		if e, z := dst[f], dst[audioFrames+f]; !(e > 0) || z < 0 || z > 1 {
			t.Fatalf("frame %d: log energy %v (want > 0), crossing rate %v (want 0–1)", f, e, z)
		}
	}
	// Silence has zero energy.
	silent := make([]byte, audioHeader+2*audioRateHz)
	putWAVHeader(silent, audioRateHz)
	if err := c.process(silent, nil, dst); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 0 || dst[audioFrames] != 0 {
		t.Errorf("silence: energy %v crossings %v, want 0 0", dst[0], dst[audioFrames])
	}
	for _, bad := range [][]byte{[]byte("RIFF"), data[:audioHeader+10], append([]byte("RIFX"), data[4:]...)} {
		if err := c.process(bad, nil, dst); err == nil {
			t.Errorf("malformed clip of %d bytes accepted", len(bad))
		}
	}
}

func TestLanguageProcess(t *testing.T) {
	c := languageCodec{}
	dst := make([]float32, c.tensorLen())
	for i := range dst {
		dst[i] = -1
	}
	if err := c.process([]byte{1, 0, 0x10, 0x27}, nil, dst); err != nil { // tokens 1 and 10000
		t.Fatal(err)
	}
	if dst[0] != 1 || dst[1] != 10000 || slices.Max(dst[2:]) != 0 || slices.Min(dst[2:]) != 0 {
		t.Errorf("got %v %v then pad in [%v, %v], want 1 10000 then zeros", dst[0], dst[1], slices.Min(dst[2:]), slices.Max(dst[2:]))
	}
	if err := c.process([]byte{1, 2, 3}, nil, dst); err == nil {
		t.Error("odd byte count accepted")
	}
}

func TestReadInto_ReusesAndGrows(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "s"), filepath.Join(dir, "b")
	if err := os.WriteFile(small, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	bigData := make([]byte, 3<<20)
	for i := range bigData {
		bigData[i] = byte(i * 7)
	}
	if err := os.WriteFile(big, bigData, 0o644); err != nil {
		t.Fatal(err)
	}
	buf, err := readInto(big, nil)
	if err != nil || !slices.Equal(buf, bigData) {
		t.Fatalf("big: %d bytes, %v", len(buf), err)
	}
	buf2, err := readInto(small, buf)
	if err != nil || string(buf2) != "abc" || &buf2[0] != &buf[0] {
		t.Errorf("small into a big buffer: %q, %v, reused %v", buf2, err, &buf2[0] == &buf[0])
	}
	if _, err := readInto(filepath.Join(dir, "none"), buf); err == nil {
		t.Error("missing file read without error")
	}
}

func BenchmarkDecodeImageSample(b *testing.B) {
	benchProcess(b, imageCodec{})
}

func BenchmarkProcessAudioSample(b *testing.B) {
	benchProcess(b, audioCodec{})
}

func BenchmarkProcessLanguageSample(b *testing.B) {
	benchProcess(b, languageCodec{})
}

func benchProcess(b *testing.B, c codec) {
	var data [][]byte
	var size int
	for i := range 8 {
		d, err := c.generate(1, i)
		if err != nil {
			b.Fatal(err)
		}
		data = append(data, d)
		size += len(d)
	}
	dst := make([]float32, c.tensorLen())
	r := newRNG(1)
	b.SetBytes(int64(size / len(data)))
	for i := 0; b.Loop(); i++ {
		if err := c.process(data[i%len(data)], &r, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerateImageSample(b *testing.B) {
	c := imageCodec{}
	for i := 0; b.Loop(); i++ {
		d, err := c.generate(1, i)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(d)))
	}
}
