// Command refgen writes the test fixtures of package nsfwjs: the reference
// images of the MobileNetV2 parity test (pretrained/nsfwjs/testdata/images)
// and, for the TF.js reference script, the same images as one uint8 NHWC
// .npy array.
//
//	go run ./pretrained/nsfwjs/internal/refgen -skimage DIR -npy /tmp/inputs.npy
//
// DIR is skimage/data from the Debian package python3-skimage (apt-get
// download python3-skimage; dpkg-deb -x). Every image is 224×224, the
// model's input size, so the adapter's resize step is a no-op on them and
// both runtimes see identical pixels: the first eight Fashion-MNIST queries
// of the demo subset (grey, resized 28 → 224 with the adapter's PIL-exact
// bilinear filter) and four public-domain / CC0 photographs (resized to
// 224×224 the same way).
package main
