// Package batch runs many agent tasks, each on a private copy of its
// workspace in its own sandbox: `agentbox batch tasks.yaml`.
//
// A batch is read from a task file (YAML or JSON Lines; see LoadTasks) and
// validated as a whole before anything starts. Each task's workspace is
// copied to a work directory (symlinks copied as symlinks, modes kept, size
// capped), the sandbox is started on the copy, the agent runs, and the files
// it changed are exported to OUTPUT/<id>/ together with the final answer and
// a log excerpt. The source directories are never written.
//
// Scheduling runs up to Concurrency tasks at once. A warm pool prepares the
// next tasks (workspace copy + started container) while the current ones
// run, so that a worker picking a task up does not wait for a cold
// container. Every container, pooled or running, is closed before Run
// returns, whatever happens.
//
// OUTPUT/results.jsonl gets one complete, fsynced line per finished task;
// a batch that is killed leaves a valid file, and Resume skips the tasks
// that already have a line (a torn last line is dropped).
package batch
