// Package syncfile is a shared helper of the writers of large files (the
// CLI's output files, the local object store) that makes the fsync of a
// large file interruptible.
//
// (*os.File).Sync is one system call that lasts until every dirty page of
// the file is on stable storage: for a freshly written file of gigabytes
// that is many seconds, during which a cancelled context (SIGINT) cannot
// be noticed and the process cannot even exit (a thread in fsync waits
// uninterruptibly). Flush writes the dirty data back in bounded chunks and
// checks the context between them, so the Sync that follows has little
// left to do.
package syncfile
