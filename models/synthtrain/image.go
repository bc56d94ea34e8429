package synthtrain

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
)

// The image preset: ImageNet-like JPEGs, decoded and augmented the way
// torchvision's RandomResizedCrop + RandomHorizontalFlip + ToTensor +
// Normalize would.
const (
	imageWidth   = 500
	imageHeight  = 375
	imageQuality = 90
	imageOutSide = 224
	imageNoise   = 64 // peak-to-peak noise added to every channel
)

// imageMean and imageStd are ImageNet's channel statistics, as torchvision
// normalises with them.
func imageNorm() (mean, std [3]float32) {
	return [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
}

type imageCodec struct{}

func (imageCodec) tensorLen() int { return 3 * imageOutSide * imageOutSide }

// generate renders sample idx: a per-channel gradient, a few filled
// rectangles and ellipses, and per-pixel noise so that the JPEG is not
// trivially compressible; then encodes it at quality 90.
func (imageCodec) generate(seed uint64, idx int) ([]byte, error) {
	r := newRNG(seed, 1, uint64(idx))
	img := image.NewRGBA(image.Rect(0, 0, imageWidth, imageHeight))
	var base, dx, dy [3]float64
	for c := range 3 {
		base[c] = float64(r.between(20, 235))
		dx[c] = (r.float() - 0.5) * 200 / imageWidth
		dy[c] = (r.float() - 0.5) * 200 / imageHeight
	}
	for y := range imageHeight {
		row := img.Pix[y*img.Stride:]
		for x := range imageWidth {
			for c := range 3 {
				row[4*x+c] = clamp8(base[c] + dx[c]*float64(x) + dy[c]*float64(y))
			}
			row[4*x+3] = 255
		}
	}
	for range r.between(3, 8) {
		col := color.RGBA{uint8(r.intn(256)), uint8(r.intn(256)), uint8(r.intn(256)), 255}
		x0, y0 := r.intn(imageWidth), r.intn(imageHeight)
		w, h := r.between(20, imageWidth/2), r.between(20, imageHeight/2)
		ellipse := r.intn(2) == 0
		for y := y0; y < min(y0+h, imageHeight); y++ {
			for x := x0; x < min(x0+w, imageWidth); x++ {
				if ellipse {
					ex := 2*float64(x-x0)/float64(w) - 1
					ey := 2*float64(y-y0)/float64(h) - 1
					if ex*ex+ey*ey > 1 {
						continue
					}
				}
				img.SetRGBA(x, y, col)
			}
		}
	}
	var noise uint64
	for i := 0; i < len(img.Pix); i++ {
		if i&7 == 0 {
			noise = r.next()
		}
		if i&3 == 3 {
			continue // alpha
		}
		n := int(noise&0xff)*imageNoise/256 - imageNoise/2
		noise >>= 8
		img.Pix[i] = uint8(min(max(int(img.Pix[i])+n, 0), 255))
	}
	var buf bytes.Buffer
	buf.Grow(160 << 10)
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: imageQuality}); err != nil {
		return nil, fmt.Errorf("encode jpeg %d: %w", idx, err)
	}
	return buf.Bytes(), nil
}

func clamp8(v float64) uint8 {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return uint8(v + 0.5)
}

// process decodes a JPEG, takes a random resized crop (35%–100% of the area;
// torchvision draws 8%–100%), resizes it bilinearly to 224×224, flips it
// with probability ½ and writes it normalised, channel-major, into dst.
func (imageCodec) process(data []byte, r *rng, dst []float32) error {
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode jpeg: %w", err)
	}
	b := img.Bounds()
	x, y, w, h := randomCrop(r, b.Dx(), b.Dy())
	flip := r.intn(2) == 0
	resizeInto(img, image.Rect(x, y, x+w, y+h).Add(b.Min), flip, dst)
	return nil
}

// resizeInto resizes the crop of img bilinearly to 224×224, mirrors it if
// flip, and writes it normalised, channel-major (CHW), into dst.
func resizeInto(img image.Image, crop image.Rectangle, flip bool, dst []float32) {
	mean, std := imageNorm()
	n := imageOutSide
	plane := n * n
	// Source coordinate and weight of every output column and row.
	xs := make([]bilinearTap, n)
	ys := make([]bilinearTap, n)
	for i := range n {
		xs[i] = tap(i, n, crop.Dx(), crop.Min.X)
		ys[i] = tap(i, n, crop.Dy(), crop.Min.Y)
	}
	ycc, isYCC := img.(*image.YCbCr)
	for oy := range n {
		ty := ys[oy]
		for ox := range n {
			tx := xs[ox]
			if flip {
				tx = xs[n-1-ox]
			}
			var rf, gf, bf float32
			if isYCC {
				rf, gf, bf = sampleYCbCr(ycc, tx, ty)
			} else {
				rf, gf, bf = sampleGeneric(img, tx, ty)
			}
			o := oy*n + ox
			dst[o] = (rf/255 - mean[0]) / std[0]
			dst[plane+o] = (gf/255 - mean[1]) / std[1]
			dst[2*plane+o] = (bf/255 - mean[2]) / std[2]
		}
	}
}

// randomCrop picks a crop of 35%–100% of the area with aspect ratio in
// [3/4, 4/3], falling back to the whole image after ten misses.
func randomCrop(r *rng, w, h int) (x, y, cw, ch int) {
	for range 10 {
		area := float64(w*h) * (0.35 + 0.65*r.float())
		aspect := 0.75 + (4.0/3-0.75)*r.float()
		cw = int(math.Sqrt(area*aspect) + 0.5)
		ch = int(math.Sqrt(area/aspect) + 0.5)
		if cw >= 1 && ch >= 1 && cw <= w && ch <= h {
			return r.intn(w - cw + 1), r.intn(h - ch + 1), cw, ch
		}
	}
	return 0, 0, w, h
}

// bilinearTap is a source coordinate pair and the weight of the second.
type bilinearTap struct {
	i0, i1 int
	w1     float32
}

// tap maps output index i of n onto a source span of length span starting at
// off, with pixel centres aligned (as PIL and torchvision do).
func tap(i, n, span, off int) bilinearTap {
	f := (float64(i)+0.5)*float64(span)/float64(n) - 0.5
	if f < 0 {
		f = 0
	}
	i0 := int(f)
	if i0 > span-1 {
		i0 = span - 1
	}
	i1 := min(i0+1, span-1)
	return bilinearTap{i0: off + i0, i1: off + i1, w1: float32(f - float64(i0))}
}

// sampleYCbCr interpolates luma bilinearly and takes chroma from the
// nearest subsampled pixel, then converts to RGB (JFIF, full range).
func sampleYCbCr(m *image.YCbCr, tx, ty bilinearTap) (r, g, b float32) {
	y00 := float32(m.Y[m.YOffset(tx.i0, ty.i0)])
	y01 := float32(m.Y[m.YOffset(tx.i1, ty.i0)])
	y10 := float32(m.Y[m.YOffset(tx.i0, ty.i1)])
	y11 := float32(m.Y[m.YOffset(tx.i1, ty.i1)])
	top := y00 + (y01-y00)*tx.w1
	bot := y10 + (y11-y10)*tx.w1
	yy := top + (bot-top)*ty.w1
	ci := m.COffset(tx.i0, ty.i0)
	cb := float32(m.Cb[ci]) - 128
	cr := float32(m.Cr[ci]) - 128
	return clampF(yy + 1.402*cr), clampF(yy - 0.344136*cb - 0.714136*cr), clampF(yy + 1.772*cb)
}

// sampleGeneric is the slow path for images that are not YCbCr (grayscale
// or CMYK JPEGs from elsewhere).
func sampleGeneric(m image.Image, tx, ty bilinearTap) (r, g, b float32) {
	var acc [3]float32
	for _, p := range [4]struct {
		x, y int
		w    float32
	}{
		{tx.i0, ty.i0, (1 - tx.w1) * (1 - ty.w1)},
		{tx.i1, ty.i0, tx.w1 * (1 - ty.w1)},
		{tx.i0, ty.i1, (1 - tx.w1) * ty.w1},
		{tx.i1, ty.i1, tx.w1 * ty.w1},
	} {
		cr, cg, cb, _ := m.At(p.x, p.y).RGBA()
		acc[0] += p.w * float32(cr>>8)
		acc[1] += p.w * float32(cg>>8)
		acc[2] += p.w * float32(cb>>8)
	}
	return acc[0], acc[1], acc[2]
}

func clampF(v float32) float32 {
	return min(max(v, 0), 255)
}
