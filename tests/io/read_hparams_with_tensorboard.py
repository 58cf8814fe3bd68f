#!/usr/bin/env python3
"""Independent check of tern's hparams event files (docs/hparams_events.md) with TensorBoard itself.

Not part of `make test`: it needs the `tensorboard` Python package (pip, in a venv outside the
build, e.g. `python3 -m venv /tmp/venv-tb && /tmp/venv-tb/bin/pip install tensorboard`).

1. Every event file under DIR is read with TensorBoard's RawEventFileLoader and its Event proto;
   each "hparams" summary value is parsed with the plugin's own metadata.parse_*_plugin_data
   (its compiled protos) and must equal the value TensorBoard's writer makes from the same
   message (metadata.create_summary_metadata + metadata.NULL_TENSOR): as messages, and byte for
   byte (a map's entries against its deterministic, key-sorted serialization). Scalars are
   listed.
2. `tensorboard --logdir DIR` is started (both loaders: --load_fast=false and =true, the Rust
   data server) and the dashboard's own HTTP API is asked for the experiment and the session
   groups (the rows of the table, parallel-coordinates and scatter views).

Usage: read_hparams_with_tensorboard.py DIR [--expect-sessions N]
Exits 1 if a check fails.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from google.protobuf import text_format
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import metadata, plugin_data_pb2

PARSERS = {
    metadata.EXPERIMENT_TAG: ("experiment", metadata.parse_experiment_plugin_data),
    metadata.SESSION_START_INFO_TAG: ("session_start_info",
                                      metadata.parse_session_start_info_plugin_data),
    metadata.SESSION_END_INFO_TAG: ("session_end_info", metadata.parse_session_end_info_plugin_data),
}


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def read_files(root):
    paths = sorted(
        os.path.join(d, f) for d, _, files in os.walk(root) for f in files if "tfevents" in f)
    if not paths:
        fail(f"no event files under {root}")
    for path in paths:
        print(f"== {os.path.relpath(path, root)}")
        for record in event_file_loader.RawEventFileLoader(path).Load():
            event = event_pb2.Event.FromString(record)
            if event.HasField("file_version"):
                print(f"  file_version {event.file_version}")
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != metadata.PLUGIN_NAME:
                    print(f"  step {event.step}  scalar {value.tag} = {value.simple_value!r}")
                    continue
                if value.tag not in PARSERS:
                    fail(f"unexpected hparams tag {value.tag}")
                field, parse = PARSERS[value.tag]
                message = parse(value.metadata.plugin_data.content)
                data = plugin_data_pb2.HParamsPluginData()
                getattr(data, field).CopyFrom(message)
                want = summary_pb2.Summary.Value(tag=value.tag,
                                                 metadata=metadata.create_summary_metadata(data),
                                                 tensor=metadata.NULL_TENSOR)
                same_bytes = value == want
                got_content = value.metadata.plugin_data.content
                value.metadata.plugin_data.content = want.metadata.plugin_data.content
                if value != want or plugin_data_pb2.HParamsPluginData.FromString(
                        got_content) != data:
                    fail(f"{path}: {value.tag} differs from TensorBoard's own writer:\n{value}\n"
                         f"want\n{want}")
                text = text_format.MessageToString(message, as_one_line=True)
                how = ("same bytes" if same_bytes else
                       "same bytes, map keys sorted" if got_content == data.SerializeToString(
                           deterministic=True) else "same message")
                print(f"  wall_time {event.wall_time:.2f}  {value.tag}  "
                      f"(TensorBoard's writer: {how})\n    {text}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, route, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/data/plugin/hparams/{route}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def ask_dashboard(root, load_fast, expect_sessions):
    port = free_port()
    tb = subprocess.Popen([
        sys.executable, "-m", "tensorboard.main", "--logdir", root, "--port",
        str(port), "--host", "127.0.0.1", f"--load_fast={load_fast}", "--reload_interval", "1"
    ],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    try:
        groups = None
        for _ in range(120):  # until the logdir is loaded
            time.sleep(0.5)
            try:
                experiment = post(port, "experiment", {"experimentName": ""})
                groups = post(port, "session_groups", {
                    "experimentName": "",
                    "allowedStatuses":
                    ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
                    "colParams": [],
                    "startIndex": 0,
                    "sliceSize": 100
                })
            except OSError:
                continue
            if len(groups.get("sessionGroups", [])) >= expect_sessions:
                break
        if groups is None:
            fail(f"tensorboard --load_fast={load_fast} did not answer: {tb.stderr.read1()}")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugins_listing") as r:
            active = json.loads(r.read())["hparams"]["enabled"]
    finally:
        tb.terminate()
        tb.wait()
    print(f"== tensorboard --load_fast={load_fast}: hparams plugin enabled = {active}")
    print("POST /data/plugin/hparams/experiment ->")
    print(json.dumps(experiment, indent=1, sort_keys=True))
    print("POST /data/plugin/hparams/session_groups ->")
    print(json.dumps(groups, indent=1, sort_keys=True))
    if not active:
        fail("the hparams dashboard is not active")
    if len(groups.get("sessionGroups", [])) != expect_sessions:
        fail(f"expected {expect_sessions} session groups")
    return experiment, groups


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--expect-sessions", type=int, default=2)
    args = parser.parse_args()
    read_files(args.dir)
    results = [ask_dashboard(args.dir, fast, args.expect_sessions) for fast in ("false", "true")]
    if results[0] != results[1]:
        print("NOTE: the two loaders answer differently (compare the JSON above)")
    print("OK")


if __name__ == "__main__":
    main()
