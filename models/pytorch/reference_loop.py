"""The training loop the three reference jobs share (train_imagenet.py,
train_lm.py, train_speech.py): epochs over the job's DataLoader wrapped in
SynergyMetrics, each batch running either the real step or, without CUDA and
when asked, the emulated GPU step (a timed wait; the model is never built),
stopping with exit status 0 after --max-iterations. It checkpoints and
resumes in Lightning's and submitit's Slurm convention (synergy_metrics'
Checkpointer: SIGUSR1 saves, requeues and exits 3; the next start resumes at
the next iteration, each epoch's shuffle seeded by --seed and the epoch).
Standard library only.
"""

import os
import sys
import time

from synergy_metrics import Checkpointer, SynergyMetrics, batch_size, emulated_step, seed_epoch


def resolve_step(prog, args, cuda, model):
    """The emulated step the flags ask for (None: run the real step), or
    exit with the flag's error."""
    try:
        return emulated_step(args, args.batch, cuda=cuda, model=getattr(args, "emulate_model", None) or model)
    except ValueError as e:
        sys.exit("%s: %s" % (prog, e))


def banner(prog, what, args, step, device, threads, extra=""):
    """One line saying what runs where: the model or the emulated step, the
    batch, the workers, torch's intra-op threads (from the environment:
    OMP_NUM_THREADS, never set here) and the profiler's point label."""
    point = os.environ.get("SYNERGY_POINT", "")
    print("%s: %s on %s, batch %d, %d workers, %d torch threads%s%s" % (
        prog, what, "emulated GPU (%s)" % step.label if step else device, args.batch, args.workers, threads,
        extra, (" [" + point + "]") if point else ""), flush=True)


def add_checkpoint_args(p):
    """The flags of checkpointing (docs/job-contract.md, "Checkpoint and resume")."""
    p.add_argument("--checkpoint-every", dest="checkpoint_every", type=int, default=0,
                   help="also save the checkpoint every N iterations (default 0: when signalled and at the end)")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds each epoch's shuffle with the epoch, so a resumed run sees the same batches (default 0)")


def run(args, loader, step=None, real_step=None, samples=None, state=None):
    """Train for args.epochs passes over loader, or until args.max_iterations
    iterations (0: no cap). step: a GPUStep to wait instead of the model;
    else real_step(batch) runs the model on a batch and returns its loss (a
    tensor) or None. The step ends when real_step returns, so a CUDA
    real_step must synchronise before it returns. samples: counts a batch's
    samples (default: synergy_metrics.batch_size). state: objects to keep in
    the checkpoint (model=..., optimizer=...), restored when it resumes.
    Returns 0; a stop by SIGUSR1/SIGTERM exits 3 after saving."""
    start = time.time()
    ck = Checkpointer(every=getattr(args, "checkpoint_every", 0))
    if state:
        ck.register(**state)
    if ck.resumed:
        print("resumed at iteration %d (epoch %d, batch %d) from %s" % (ck.iterations, ck.epoch, ck.batch, ck.dir),
              flush=True)
    count = samples or batch_size
    with SynergyMetrics(emulated=step or False) as metrics:
        metrics.iterations = ck.iterations  # the stream's "iter" goes on where it stopped
        if args.max_iterations and ck.iterations >= args.max_iterations:
            return 0
        first = ck.iterations
        for epoch in range(ck.epoch, args.epochs):
            seed_epoch(loader, getattr(args, "seed", 0), epoch)
            for batch in metrics.wrap(ck.resume_pass(loader, epoch), epoch=epoch, samples=samples):
                if step is not None:
                    step.wait()
                    done, loss = metrics.step_done(intended_s=step.step_s), None
                else:
                    loss = real_step(batch)
                    done = metrics.step_done()
                ck.step_done(done, samples=count(batch))
                if args.print_freq and done % args.print_freq == 0:
                    print("iter %d epoch %d%s %.1f samples/s" % (
                        done, epoch, " loss %.4f" % loss.item() if loss is not None else "",
                        (done - first) * args.batch / (time.time() - start)), flush=True)
                if args.max_iterations and done >= args.max_iterations:
                    ck.save("done")
                    return 0
            ck.end_epoch()
        ck.save("done")
    return 0


def check_common(p, args):
    """Errors for the flags every reference job has, naming the flag."""
    for name in ("batch", "epochs"):
        if getattr(args, name) < 1:
            p.error("--%s: must be >= 1, got %d" % (name, getattr(args, name)))
    if args.workers < 0:
        p.error("--workers: must be >= 0, got %d" % args.workers)
    if args.max_iterations < 0:
        p.error("--max-iterations: must be >= 0 (0: no cap), got %d" % args.max_iterations)
    if args.emulate_step < 0:
        p.error("--emulate-step: must be >= 0, got %g" % args.emulate_step)
    if getattr(args, "checkpoint_every", 0) < 0:
        p.error("--checkpoint-every: must be >= 0 (0: when signalled and at the end), got %d" % args.checkpoint_every)
