package main

// main is required by -buildmode=c-shared and never runs.
func main() {}
