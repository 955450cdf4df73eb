package classroom

import (
	"encoding/xml"
	"image"
	"image/color"
	"strconv"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// The QR code on the projector scans: the SVG, painted rect by rect into
// a bitmap, is read back by an independent decoder as the join URL.
func TestQRSVGScans(t *testing.T) {
	for _, u := range []string{
		"http://127.0.0.1:8080/room/ABCDE-FGHJK",
		"https://lab.example.edu:8443/room/Z2345-6789A",
		"http://[fe80::1]:8080/room/MNPQR-STVWX",
	} {
		svg, err := QRSVG(u)
		if err != nil {
			t.Fatal(err)
		}
		img := paintSVG(t, svg, 6)
		bmp, err := gozxing.NewBinaryBitmapFromImage(img)
		if err != nil {
			t.Fatal(err)
		}
		res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
		if err != nil {
			t.Fatalf("%s: the QR code does not scan: %v", u, err)
		}
		if got := res.GetText(); got != u {
			t.Errorf("the QR code reads %q, want %q", got, u)
		}
	}
}

// paintSVG paints QRSVG's output, scale pixels per module: the first rect
// is the white background, every other rect is black.
func paintSVG(t *testing.T, svg []byte, scale int) *image.Gray {
	t.Helper()
	type rect struct{ x, y, w, h int }
	var rects []rect
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]int{}
		for _, a := range se.Attr {
			if a.Name.Local == "viewBox" {
				f := strings.Fields(a.Value)
				n, _ = strconv.Atoi(f[2])
			}
			if v, err := strconv.Atoi(a.Value); err == nil {
				attr[a.Name.Local] = v
			}
		}
		if se.Name.Local == "rect" {
			rects = append(rects, rect{attr["x"], attr["y"], attr["width"], attr["height"]})
		}
	}
	if n == 0 || len(rects) < 2 {
		t.Fatalf("no viewBox or no modules in %.200s", svg)
	}
	img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
	for i, r := range rects {
		c := color.Gray{0}
		if i == 0 {
			c = color.Gray{255}
		}
		for y := r.y * scale; y < (r.y+r.h)*scale; y++ {
			for x := r.x * scale; x < (r.x+r.w)*scale; x++ {
				img.SetGray(x, y, c)
			}
		}
	}
	return img
}
