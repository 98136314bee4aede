-- Named targets (docs/TARGETS.md): a task names the target its body runs
-- on ('': its queue's default target, else the node's default), and a queue
-- may name a default target. A node claims only tasks of targets it serves;
-- the claim reads past the others on its ready indexes, which stay as they
-- were (docs/TARGETS.md, "What a claim costs").
ALTER TABLE readpast_tasks ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE readpast_queues ADD COLUMN default_target TEXT NOT NULL DEFAULT '';
