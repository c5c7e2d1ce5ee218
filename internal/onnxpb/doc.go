// Package onnxpb is a minimal writer of ONNX models in the protobuf wire
// format, shared by the converters of pretrained/convert and the tiny test
// models of the ONNX adapters (extract/onnx). It covers exactly what they
// need: a single graph of nodes with int/ints/float/string attributes,
// float32 and int64 initializers (float data optionally in an external
// file), and tensor-typed graph inputs and outputs with fixed or symbolic
// dimensions.
//
// The encoding follows onnx.proto (IR version 8). Field numbers used:
//
//	ModelProto         ir_version=1 producer_name=2 graph=7 opset_import=8
//	OperatorSetIdProto domain=1 version=2
//	GraphProto         node=1 name=2 initializer=5 input=11 output=12
//	NodeProto          input=1 output=2 name=3 op_type=4 attribute=5 domain=7
//	AttributeProto     name=1 f=2 i=3 s=4 ints=8 type=20
//	TensorProto        dims=1 data_type=2 float_data=4 int64_data=7 name=8
//	ValueInfoProto     name=1 type=2
//	TypeProto          tensor_type=1
//	TypeProto.Tensor   elem_type=1 shape=2
//	TensorShapeProto   dim=1
//	Dimension          dim_value=1 dim_param=2
package onnxpb
