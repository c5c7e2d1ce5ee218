package pretrained

import "github.com/vertebrae-eval/vertebrae/pretrained/nsfwjs"

// NSFWJSMobileNetV2 is the name of the MobileNetV2 image backbone directory.
const NSFWJSMobileNetV2 = nsfwjs.DirName

// NSFWJSDim is its embedding width (layer flatten_1).
const NSFWJSDim = nsfwjs.Dim

// nsfwjsMobileNet converts the TF.js Keras layers MobileNetV2 of nsfwjs
// (package extract/onnx/keras/nsfwjs) to an onnx_image directory:
//
//	nsfwjs-mobilenet-v2/model.onnx                input pixel_values [n,3,224,224]; output flatten_1 [n,1280]
//	nsfwjs-mobilenet-v2/preprocessor_config.json  224×224 bilinear, ×1/255, no normalisation
//	nsfwjs-mobilenet-v2/conversion.json           source digests and converter choices
//	nsfwjs-mobilenet-v2/LICENSE                   MIT
var nsfwjsMobileNet = Preparer{
	Name:         NSFWJSMobileNetV2,
	Package:      nsfwjs.Package + "@" + nsfwjs.Version,
	Integrity:    "sha512-krC1fgeTLXtZwgdpKJ0jm7hqv0gTSRQQRL+FhOaxaJ9Wj92t42BO3csO2odwgTAgZgf2RvkwPtp0R8Aa7dc+MA==",
	Licence:      "MIT",
	LicenceFiles: []string{nsfwjs.LicenseFile},
	About:        "MobileNetV2 1.0 @224 (Keras, TF.js layers model), ImageNet backbone fine-tuned for NSFW detection; embedding = flatten_1 (1280-d); converted from TF.js to ONNX",
	Build:        nsfwjs.Build,
}
