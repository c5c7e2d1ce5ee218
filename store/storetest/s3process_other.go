//go:build !unix

package storetest

func (p *S3Process) resume() {}
