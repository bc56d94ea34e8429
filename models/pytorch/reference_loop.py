"""The training loop the three reference jobs share (train_imagenet.py,
train_lm.py, train_speech.py): epochs over the job's DataLoader wrapped in
SynergyMetrics, each batch running either the real step or, without CUDA and
when asked, the emulated GPU step (a timed wait; the model is never built),
stopping with exit status 0 after --max-iterations. Standard library only.
"""

import os
import sys
import time

from synergy_metrics import SynergyMetrics, emulated_step


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


def run(args, loader, step=None, real_step=None, samples=None):
    """Train for args.epochs passes over loader, or until args.max_iterations
    iterations (0: no cap). step: a GPUStep to wait instead of the model;
    else real_step(batch) runs the model on a batch and returns its loss (a
    tensor) or None. The step ends when real_step returns, so a CUDA
    real_step must synchronise before it returns. samples: counts a batch's
    samples (default: synergy_metrics.batch_size). Returns 0."""
    start = time.time()
    with SynergyMetrics(emulated=step or False) as metrics:
        for epoch in range(args.epochs):
            for batch in metrics.wrap(loader, epoch=epoch, samples=samples):
                if step is not None:
                    step.wait()
                    done, loss = metrics.step_done(intended_s=step.step_s), None
                else:
                    loss = real_step(batch)
                    done = metrics.step_done()
                if args.print_freq and done % args.print_freq == 0:
                    print("iter %d epoch %d%s %.1f samples/s" % (
                        done, epoch, " loss %.4f" % loss.item() if loss is not None else "",
                        done * args.batch / (time.time() - start)), flush=True)
                if args.max_iterations and done >= args.max_iterations:
                    return 0
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
