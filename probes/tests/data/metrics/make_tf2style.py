import time, numpy as np
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.compat.proto import summary_pb2, event_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.scalar import metadata as scalar_meta
from tensorboard.util import tensor_util
w = EventFileWriter('/tmp/tf2ev')
for step in range(1, 6):
    vals = []
    # TF2 style: tensor scalar via make_tensor_proto (tensor_content or float_val), metadata only first time
    for tag, v, dt in [('loss', 1.0/step, np.float32), ('lr', 1e-3*step, np.float64), ('count', step, np.int64), ('h', 0.5*step, np.float16)]:
        t = tensor_util.make_tensor_proto(np.array(v, dtype=dt))
        kw = {}
        if step == 1:
            kw['metadata'] = scalar_meta.create_summary_metadata(display_name=tag, description='d')
        vals.append(summary_pb2.Summary.Value(tag=tag, tensor=t, **kw))
    # histogram-like non-scalar plugin tensor
    t = tensor_util.make_tensor_proto(np.zeros((3,3), dtype=np.float64))
    md = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name='histograms'))
    vals.append(summary_pb2.Summary.Value(tag='hist', tensor=t, metadata=md))
    vals.append(summary_pb2.Summary.Value(tag='simple', simple_value=float(step)*2))
    w.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=vals)))
w.close()
