"""The examples of examples/python run for a few steps on tiny data."""
import os
import pathlib
import subprocess
import sys

import numpy as np

import oa
from test_data import images_and_labels, write_idx

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run_example(name, *args):
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(oa.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fashion_mnist_example(tmp_path):
    for split, count in (("train", 40), ("t10k", 12)):
        images, labels = images_and_labels(count, seed=count)
        write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", labels)
    out = run_example("fashion_mnist.py", "--quick", "--data", str(tmp_path), "--batch-size", "8", "--steps", "3")
    assert "9098 parameters" in out and "epoch 1/1: step 3/3, loss" in out
    accuracy = float(out.split("test accuracy ")[1].split("%")[0])
    assert 0 <= accuracy <= 100


def test_char_transformer_example(tmp_path):
    text = tmp_path / "text"
    text.write_bytes(bytes(np.random.default_rng(0).integers(32, 127, 800, dtype=np.uint8)))
    out = run_example("char_transformer.py", "--input", str(text), "--context", "8", "--layers", "1", "--heads", "2",
                      "--width", "16", "--steps", "3", "--batch-size", "4", "--eval-every", "2")
    assert "oa train text --context 8 --layers 1 --heads 2 --width 16 --steps 3" in out
    assert "step 2: validation" in out
    bpc = float(out.split("step 3: validation ")[1].split()[0])
    assert 0 < bpc < 10
