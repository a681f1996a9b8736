package profiles
import ("testing";"bytes";"go.yaml.in/yaml/v3")
func BenchmarkZZDecoder(b *testing.B) {
	src := source64KiB(b)
	b.ReportAllocs()
	for b.Loop() { var n yaml.Node; yaml.NewDecoder(bytes.NewReader(src)).Decode(&n) }
}
func BenchmarkZZUnmarshal(b *testing.B) {
	src := source64KiB(b)
	b.ReportAllocs()
	for b.Loop() { var n yaml.Node; yaml.Unmarshal(src, &n) }
}
func BenchmarkZZPrescan(b *testing.B) {
	src := source64KiB(b)
	for b.Loop() { prescan(src); newLineIndex(src) }
}
func BenchmarkZZWalk(b *testing.B) {
	src := source64KiB(b)
	doc, _ := parseSingle(src)
	b.ReportAllocs()
	for b.Loop() { c := compiler{walker: walker{lines: newLineIndex(src)}}; c.top(doc.Content[0]) }
}
func BenchmarkZZCanonical(b *testing.B) {
	src := source64KiB(b)
	c, _ := CompileCustom(src)
	b.ReportAllocs()
	for b.Loop() { CompileCanonicalOnly(c.HighData) }
}
func CompileCanonicalOnly(h map[string]any) { _, _ = receiptCanonical(h) }
