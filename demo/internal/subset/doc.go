// Package subset defines the file that package demo embeds and decodes: a
// fixed subset of Fashion-MNIST written by demo/internal/gen. Keeping the
// layout here lets the generator build without importing package demo, which
// cannot compile until the file exists.
//
// The file is stored uncompressed: gzip shrank it from 4.7 MB to 2.6 MB of
// the binary, but inflating it took some 40 ms at the start of every demo
// run, with nothing else to do meanwhile. Its layout (integers
// little-endian uint32):
//
//	offset  size        field
//	0       8           magic "VTBFMNST"
//	8       4           version (1)
//	12      4           image rows (28)
//	16      4           image cols (28)
//	20      4           nq: number of queries
//	24      4           ng: number of gallery images
//	28      nq*rows*cols  query pixels, uint8, row-major, image after image
//	...     nq          query labels, uint8 class index 0..9
//	...     ng*rows*cols  gallery pixels
//	...     ng          gallery labels
//
// Query i is image i of the Fashion-MNIST test split and gallery image i is
// image i of the training split, so IDs need not be stored.
package subset
