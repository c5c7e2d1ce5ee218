// Command gen is the build-time generator of the demo's data, outside the
// run flow: it writes demo/data/fashion-mnist-subset.bin, the Fashion-MNIST
// subset that package demo embeds: the first 1,000 test images as queries
// and the first 5,000 training images as the gallery, with their labels.
//
// It is run from the demo directory by "go generate" and reads the idx files
// installed by the Debian package dataset-fashion-mnist. The output depends
// only on those files, so regenerating reproduces the committed file byte
// for byte.
package main
