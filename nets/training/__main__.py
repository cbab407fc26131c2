"""``python -m nets.training <step>``: the training pipeline's commands (see nets/README.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import steps
from .positions import RANDOM_PLIES


def _ply_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    try:
        low_n, high_n = int(low), int(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MIN-MAX, got {text!r}") from None
    if not 0 <= low_n <= high_n:
        raise argparse.ArgumentTypeError(f"expected 0 <= MIN <= MAX, got {text!r}")
    return low_n, high_n


def share(text: str) -> float:
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < f <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share in (0, 1], got {f:g}")
    return f


def at_least_one(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {n}")
    return n


def cmd_positions(args) -> int:
    steps.make_positions(args.out, shards_count=args.shards, seed=args.seed, games_per_shard=args.games_per_shard,
                         nodes=args.nodes, multipv=args.multipv, keep=args.keep, random_plies=args.random_plies,
                         random_children=args.random_children, stockfish=args.stockfish, workers=args.workers,
                         ray=args.ray)
    return 0


def cmd_own_play(args) -> int:
    if not args.net.is_file():
        print(f"own-play: no such net: {args.net}", file=sys.stderr)
        return 2
    steps.make_own_play(args.out, net=args.net, shards_count=args.shards, seed=args.seed,
                        games_per_shard=args.games_per_shard, keep=args.keep, workers=args.workers, ray=args.ray)
    return 0


def cmd_games(args) -> int:
    from .games import make_shards
    if args.every < 1 or args.first_ply < 0:
        print("games: --every must be at least 1 and --first-ply at least 0", file=sys.stderr)
        return 2
    missing = [str(p) for p in args.pgn if not p.is_file()]
    if missing:
        print(f"games: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.out.is_dir() and any(args.out.glob("shard-*.npz")):   # another set's shards would mix with these
        print(f"games: {args.out} already holds shards: give an empty folder", file=sys.stderr)
        return 2
    games, positions = make_shards(args.pgn, args.out, every=args.every, first_ply=args.first_ply)
    print(f"{games} games, {positions:,} positions in {args.out}")
    return 0


def cmd_children(args) -> int:
    steps.make_children(args.positions, args.out, parents=args.parents, seed=args.seed, workers=args.workers,
                        ray=args.ray)
    return 0


def cmd_label(args) -> int:
    steps.make_labels(args.positions, args.out, depth=args.depth, multipv=args.multipv, stockfish=args.stockfish,
                      workers=args.workers, ray=args.ray)
    return 0


def cmd_teach(args) -> int:
    from .teacher import TeacherError
    try:
        steps.make_teacher_labels(args.positions, args.out, net=args.net, draws=args.draws, workers=args.workers,
                                  ray=args.ray, value=args.value)
    except TeacherError as error:
        print(f"teach: {error}", file=sys.stderr)
        return 2
    return 0


def cmd_train(args) -> int:
    from .train import train
    train(args.positions, args.labels, args.out, blocks=args.blocks, filters=args.filters, se=not args.no_se,
          epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, weight_decay=args.weight_decay,
          val_share=args.val_share, result_weight=args.result_weight,
          policy_temperature_cp=args.policy_temperature_cp, eval_every=args.eval_every, seed=args.seed,
          threads=args.threads, limit_shards=args.limit_shards, stop_at=args.stop_at, init=args.init,
          grow=args.grow, device=args.device, loader_workers=args.loader_workers, precision=args.precision,
          repeats=args.repeats, train_only=args.train_only, tower_lr_scale=args.tower_lr_scale,
          q_mse_weight=args.q_mse_weight, ending_repeats=args.ending_repeats, decided_keep=args.decided_keep)
    return 0


def cmd_export(args) -> int:
    steps.export_net(args.checkpoint, args.out, args.positions, args.labels, args.int8)
    return 0


def cmd_average(args) -> int:
    from .average import AverageError, average, export_average
    missing = [str(p) for p in args.checkpoints if not p.is_file()]
    if missing:
        print(f"average: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        average(args.checkpoints, args.out)
    except AverageError as error:
        print(f"average: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: the average of {len(args.checkpoints)} checkpoints")
    if args.onnx:
        print(f"wrote {args.onnx}: onnxruntime vs PyTorch max |diff| {export_average(args.out, args.onnx):.2e}")
    return 0


def cmd_gate(args) -> int:
    from .gate import default_net, play, report
    lines = []
    opponents = [("heuristic", ["Evaluator=heuristic"])]
    current = default_net()
    if current and current.resolve() != args.candidate.resolve():
        opponents.insert(0, (f"default ({current.name})", [f"WeightsFile={current}"]))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, options in opponents:
        slug = name.split()[0]
        wdl = play(args.candidate, options, slug, games=args.games, tc=args.tc, concurrency=args.concurrency,
                   openings=args.openings, pgn=args.out / f"gate-{slug}.pgn")
        lines.append(report(f"{args.candidate.name} vs {name}, {args.games} games at {args.tc}", wdl))
        print(lines[-1], flush=True)
    (args.out / "gate.txt").write_text("\n".join(lines) + "\n")
    return 0


def cmd_ship(args) -> int:
    from .ship import ship
    notes = args.notes.read_text() if args.notes else ""
    target = ship(args.net, args.run, args.gate, notes)
    print(f"shipped {target} (provenance in {target.parent / 'README.md'})")
    return 0


def cmd_round(args) -> int:
    from .round import run_round
    if bool(args.blocks) != bool(args.filters):
        print("round: --blocks and --filters go together (the shape to grow the net to)", file=sys.stderr)
        return 2
    shipped = run_round(args.number, hours=args.hours, shards=args.shards, window=args.window,
                        gate_games=args.gate_games, gate_min_games=args.gate_min_games,
                        concurrency=args.concurrency, workers=args.workers, do_commit=args.commit,
                        stockfish=args.stockfish, epochs=args.epochs, lr=args.lr,
                        shape=(args.blocks, args.filters) if args.blocks or args.filters else None,
                        trained=args.trained, label_depth=args.label_depth, teacher=args.teacher,
                        draws=args.draws, batch_size=args.batch_size, precision=args.precision,
                        session_hours=args.session_hours, teacher_value=args.teacher_value,
                        train_only=args.train_only, tower_lr_scale=args.tower_lr_scale, children=args.children,
                        q_mse_weight=args.q_mse_weight, result_weight=args.result_weight,
                        ending_repeats=args.ending_repeats, new_data=not args.no_new_data,
                        positions_of=args.positions_of, average_of=args.average_of,
                        decided_keep=args.decided_keep)
    if shipped is None:
        print(f"round {args.number}: paused for the session's end; rerun the same command to resume", file=sys.stderr)
        return 4
    return 0 if shipped else 3


def cmd_retire(args) -> int:
    from .round import retire
    for number in args.numbers:
        print(f"round {number}: " + ("retired" if retire(number, args.commit) else "nothing to retire (unfinished, or "
                                     "done already)"))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nets.training", description=__doc__)
    sub = parser.add_subparsers(dest="step", required=True)

    def parallel(p):
        p.add_argument("--workers", type=int, default=0, help="local processes (default: one per core)")
        p.add_argument("--ray", metavar="ADDRESS", help="run the shards on a Ray cluster (address, or 'local')")
        p.add_argument("--stockfish", help="Stockfish executable (default: stockfish on PATH)")

    p = sub.add_parser("positions", help="Stockfish self-play positions")
    p.add_argument("--out", type=Path, default=Path("data/positions"))
    p.add_argument("--shards", type=int, default=200)
    p.add_argument("--games-per-shard", type=int, default=40)
    p.add_argument("--nodes", type=int, default=400, help="Stockfish nodes per self-play move")
    p.add_argument("--multipv", type=int, default=4, help="candidate moves to sample from")
    p.add_argument("--keep", type=float, default=0.6, help="share of each game's positions kept")
    p.add_argument("--random-plies", type=_ply_range, default=RANDOM_PLIES, metavar="MIN-MAX",
                   help="uniformly random opening moves per game (default %d-%d)" % RANDOM_PLIES)
    p.add_argument("--random-children", type=float, default=0.0, metavar="SHARE",
                   help="share of kept positions that also keep the position after a random legal move")
    p.add_argument("--seed", type=int, default=1)
    parallel(p)
    p.set_defaults(func=cmd_positions)

    p = sub.add_parser("children", help="every legal child of a sample of game positions (for the value's ranking)")
    p.add_argument("--positions", type=Path, default=Path("data/positions"))
    p.add_argument("--out", type=Path, default=Path("data/children"))
    p.add_argument("--parents", type=int, default=150, help="game positions per shard whose children are kept")
    p.add_argument("--seed", type=int, default=1)
    parallel(p)
    p.set_defaults(func=cmd_children)

    p = sub.add_parser("own-play", help="positions from a net's own play, its policy sampled (no search)")
    p.add_argument("net", type=Path, help="the ONNX net that plays (lc0's contract, with a WDL head)")
    p.add_argument("--out", type=Path, default=Path("data/own-play/positions"))
    p.add_argument("--shards", type=int, default=10)
    p.add_argument("--games-per-shard", type=int, default=64, help="games played at once, one batch a ply")
    p.add_argument("--keep", type=float, default=0.5, help="share of each game's positions kept")
    p.add_argument("--seed", type=int, default=1)
    parallel(p)
    p.set_defaults(func=cmd_own_play)

    p = sub.add_parser("games", help="positions of real games (PGN files) as shards, to label and check nets on")
    p.add_argument("pgn", type=Path, nargs="+", help="PGN files, plain or gzipped (.pgn.gz)")
    p.add_argument("--out", type=Path, default=Path("data/games/positions"))
    p.add_argument("--every", type=int, default=3, help="keep every Nth position of a game")
    p.add_argument("--first-ply", type=int, default=12, help="the first ply kept (the openings' book moves before)")
    p.set_defaults(func=cmd_games)

    p = sub.add_parser("label", help="Stockfish value and policy labels")
    p.add_argument("--positions", type=Path, default=Path("data/positions"))
    p.add_argument("--out", type=Path, default=Path("data/labels"))
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--multipv", type=int, default=1)
    parallel(p)
    p.set_defaults(func=cmd_label)

    p = sub.add_parser("teach", help="policy and value labels from a teacher network (MeanGirl-8, say)")
    p.add_argument("net", type=Path, help="the teacher: an ONNX net in lc0's contract (nets/README.md)")
    p.add_argument("--draws", type=Path, metavar="ONNX",
                   help="a net with a WDL head for the draw share, when the teacher has a value head only")
    p.add_argument("--value", type=Path, metavar="ONNX",
                   help="a net with a WDL head whose win/draw/loss is the value target (the teacher gives the policy)")
    p.add_argument("--positions", type=Path, default=Path("data/positions"))
    p.add_argument("--out", type=Path, default=Path("data/teacher"))
    parallel(p)
    p.set_defaults(func=cmd_teach)

    def data_folders(p):
        p.add_argument("--positions", type=Path, nargs="+", default=[Path("data/positions")],
                       help="positions folder(s)")
        p.add_argument("--labels", type=Path, nargs="+", default=[Path("data/labels")],
                       help="labels folder(s), one for each positions folder")

    def what_trains(p, start):
        p.add_argument("--train-only", choices=("all", "policy"), default="all",
                       help=f"policy: train the policy head alone, the tower and value of {start} frozen (its value "
                            "kept exactly)")
        p.add_argument("--tower-lr-scale", type=float, default=1.0, metavar="F",
                       help="the stem and tower learn at F times the heads' rate (0 < F <= 1)")
        p.add_argument("--q-mse-weight", type=float, default=0.0, metavar="W",
                       help="add W times the squared error of Q (win - loss) to the WDL's cross-entropy, to fit "
                            "a teacher's value closer (default 0: the cross-entropies alone)")
        p.add_argument("--result-weight", type=float, default=0.0, metavar="W",
                       help="share of the game result in the value target (default 0: the teacher's WDL alone)")
        p.add_argument("--ending-repeats", type=at_least_one, default=1, metavar="N",
                       help="train each ending (at most 10 pieces, kings included) N times an epoch (default 1)")
        p.add_argument("--decided-keep", type=share, default=1.0, metavar="F",
                       help="train on F of the decided positions (the label's |win - loss| at least 0.9; 72%% of "
                            "self-play's, 44%% of real games') an epoch (default 1: all)")

    p = sub.add_parser("train", help="train a network (PyTorch)")
    data_folders(p)
    p.add_argument("--out", type=Path, default=Path("runs/net"))
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--filters", type=int, default=32)
    p.add_argument("--no-se", action="store_true", help="plain residual blocks (no squeeze-excitation)")
    p.add_argument("--epochs", type=float, default=4.0)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--val-share", type=float, default=0.03)
    p.add_argument("--policy-temperature-cp", type=float, default=0.0,
                   help="soft policy target: softmax(score / this) over the labels' MultiPV moves (0: the best move)")
    p.add_argument("--eval-every", type=int, default=1000, help="steps between validation and checkpoint")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: one per core)")
    p.add_argument("--device", default="cpu", help="where the training steps run: cpu, or cuda on a GPU machine")
    p.add_argument("--loader-workers", type=int, default=0,
                   help="processes that build batches ahead of the steps (a GPU needs several; default: none)")
    p.add_argument("--precision", choices=("auto", "float32", "bfloat16"), default="auto",
                   help="the steps' arithmetic (auto: bfloat16 where the CPU has it in hardware, else float32)")
    p.add_argument("--limit-shards", type=int, default=0, help="use only the first N shards")
    p.add_argument("--repeats", choices=("keep", "drop"), default="keep",
                   help="a position found in several shards: train on every copy, as played (default), or on one")
    what_trains(p, "--init")
    p.add_argument("--stop-at", type=int, default=0, help="stop after this step, as an interruption would")
    p.add_argument("--init", type=Path, metavar="ONNX",
                   help="start from this exported net (a shipped generation) instead of random weights")
    p.add_argument("--grow", action="store_true",
                   help="with --init: grow that net to --blocks x --filters, computing the same function, instead "
                        "of taking its shape")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("export", help="export a checkpoint to ONNX (lc0's contract)")
    p.add_argument("checkpoint", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--int8", action="store_true", help="also write OUT-int8.onnx if it keeps the accuracy")
    data_folders(p)  # the split into training and validation comes from the checkpoint
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("average", help="the uniform average of checkpoints fine-tuned from one net, and its ONNX")
    p.add_argument("checkpoints", type=Path, nargs="+")
    p.add_argument("--out", type=Path, required=True, help="the averaged checkpoint")
    p.add_argument("--onnx", type=Path, help="also export it here")
    p.set_defaults(func=cmd_average)

    p = sub.add_parser("gate", help="play a candidate against the default net and the heuristic")
    p.add_argument("candidate", type=Path)
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--tc", default="10+0.1")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--openings", type=Path, default=Path("tests/data/openings.pgn"))
    p.add_argument("--out", type=Path, default=Path("runs/gate"))
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("ship", help="make a net the bundled default, with its provenance")
    p.add_argument("net", type=Path)
    p.add_argument("--run", type=Path, default=Path("runs/net"), help="the training run (checkpoint, history)")
    p.add_argument("--gate", type=Path, default=Path("runs/gate/gate.txt"))
    p.add_argument("--notes", type=Path, help="a Markdown file of further notes to append")
    p.set_defaults(func=cmd_ship)

    p = sub.add_parser("round", help="one training round: data, training from the shipped net, gate, ship")
    p.add_argument("number", type=int, help="the round's number (seeds its data)")
    p.add_argument("--hours", type=float, default=2.5, help="time budget the plan sizes the data to")
    p.add_argument("--shards", type=int, default=0, help="positions shards (default: planned from --hours)")
    p.add_argument("--window", type=int, default=2, help="rounds of data to train on, this one included "
                                                        "(those with a kept plan; made again where not on disk)")
    p.add_argument("--no-new-data", action="store_true", help="make no positions of this round's own: train on the "
                   "window's earlier rounds' data alone (a new recipe on data at hand)")
    p.add_argument("--positions-of", type=int, default=0, metavar="N", help="label round N's positions again (its "
                   "seed; the shards on disk are linked) instead of playing new ones: a deeper teacher, say")
    p.add_argument("--average-of", type=int, nargs="+", metavar="N", help="no data and no training: the candidate "
                   "is the average of these earlier rounds' nets (fine-tuned from one net; their checkpoints from "
                   "git's history)")
    p.add_argument("--epochs", type=float, help="training epochs (default: 2 from scratch, 1 fine-tuning)")
    p.add_argument("--lr", type=float, help="peak learning rate (default: 2e-3 from scratch, 1e-3 fine-tuning)")
    p.add_argument("--blocks", type=int, help="grow the net the round starts from to this many blocks (with "
                                             "--filters; keeps its function)")
    p.add_argument("--filters", type=int, help="grow the net the round starts from to this many filters")
    p.add_argument("--trained", type=Path, metavar="RUN", help="a run folder trained elsewhere (a GPU machine) on "
                   "this round's data: export, gate and ship it instead of training here")
    p.add_argument("--label-depth", type=int, default=6, help="Stockfish's depth for this round's labels "
                   "(deeper costs about 4.3x per two plies)")
    p.add_argument("--teacher", type=Path, metavar="ONNX", help="a network labels the positions instead of "
                   "Stockfish (MeanGirl-8, say; see 'teach')")
    p.add_argument("--draws", type=Path, metavar="ONNX", help="the WDL net giving a value-only teacher's draw share "
                   "(default: the net the round starts from)")
    p.add_argument("--teacher-value", type=Path, metavar="ONNX", help="with --teacher: a net with a WDL head whose "
                   "win/draw/loss is the value target (the shipped net, say), so the teacher teaches the policy only")
    p.add_argument("--batch-size", type=int, default=0, help="training batch size (default 256)")
    what_trains(p, "the net the round starts from")
    p.add_argument("--children", type=int, default=0, metavar="N", help="also label and train on every legal child "
                   "of N game positions a shard (about 28 each), so that the value learns to rank siblings")
    p.add_argument("--precision", choices=("auto", "float32", "bfloat16"), default="auto",
                   help="training arithmetic (auto: bfloat16 where the CPU has it in hardware)")
    p.add_argument("--session-hours", type=float, default=0.0, metavar="H",
                   help="after H hours stop training (its checkpoint) or a match (its games so far) where it is, "
                        "kept in nets/rounds/ (committed with --commit), exit status 4; the same command resumes "
                        "it on any machine")
    p.add_argument("--gate-games", type=int, default=200, help="most games of the gate")
    p.add_argument("--gate-min-games", type=int, default=100, help="games before the SPRT may stop the gate")
    p.add_argument("--concurrency", type=int, default=2, help="games at once in the gate")
    p.add_argument("--commit", action="store_true", help="git commit nets/default/ as soon as the gate decides")
    p.add_argument("--workers", type=int, default=0, help="local processes (default: one per core)")
    p.add_argument("--stockfish", help="Stockfish executable (default: stockfish on PATH)")
    p.set_defaults(func=cmd_round)

    p = sub.add_parser("retire", help="a finished round's checkpoint and failed candidate out of the tree, its games packed "
                                      "(rounds do it themselves when they finish)")
    p.add_argument("numbers", type=int, nargs="+", help="the rounds")
    p.add_argument("--commit", action="store_true", help="git commit what changed")
    p.set_defaults(func=cmd_retire)

    args = parser.parse_args(argv)
    if getattr(args, "threads", None) == 0:
        from .parallel import default_workers
        args.threads = default_workers()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
