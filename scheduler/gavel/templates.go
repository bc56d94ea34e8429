package gavel

import "fmt"

// Template is one of Gavel's job templates (its job_table.py): a model at
// a batch size, the command a physical cluster runs for it (with %s for
// the run directory), and whether it may run on several GPUs.
type Template struct {
	Model        string
	Command      string
	WorkingDir   string
	NumStepsArg  string
	NeedsDataDir bool
	Distributed  bool
}

// Templates is Gavel's job table: 26 templates, in Gavel's order (the
// generator draws uniformly by index, so the order is part of the data).
var Templates = buildTemplates()

func buildTemplates() []Template {
	var ts []Template
	add := func(model, cmd, wd, arg string, data, dist bool) {
		ts = append(ts, Template{Model: model, Command: cmd, WorkingDir: wd, NumStepsArg: arg, NeedsDataDir: data, Distributed: dist})
	}
	for _, bs := range []int{16, 32, 64, 128, 256} {
		add(fmt.Sprintf("ResNet-18 (batch size %d)", bs), fmt.Sprintf("python3 main.py --data_dir=%%s/cifar10 --batch_size %d", bs),
			"image_classification/cifar10", "--num_steps", true, true)
	}
	for _, bs := range []int{16, 32, 64, 128} {
		add(fmt.Sprintf("ResNet-50 (batch size %d)", bs), fmt.Sprintf("python3 main.py -j 8 -a resnet50 -b %d %%s/imagenet/", bs),
			"image_classification/imagenet", "--num_minibatches", true, true)
	}
	for _, bs := range []int{16, 32, 64, 128, 256} {
		add(fmt.Sprintf("Transformer (batch size %d)", bs),
			fmt.Sprintf("python3 train.py -data %%s/translation/multi30k.atok.low.pt -batch_size %d -proj_share_weight", bs),
			"translation", "-step", true, true)
	}
	for _, bs := range []int{5, 10, 20, 40, 80} {
		add(fmt.Sprintf("LM (batch size %d)", bs), fmt.Sprintf("python main.py --cuda --data %%s/wikitext2 --batch_size %d", bs),
			"language_modeling", "--steps", true, true)
	}
	for _, bs := range []int{512, 1024, 2048, 4096, 8192} {
		add(fmt.Sprintf("Recommendation (batch size %d)", bs), fmt.Sprintf("python3 train.py --data_dir %%s/ml-20m/pro_sg/ --batch_size %d", bs),
			"recommendation", "-n", true, false)
	}
	add("A3C", "python3 main.py --env PongDeterministic-v4 --workers 4 --amsgrad True", "rl", "--max-steps", false, false)
	add("CycleGAN", "python3 cyclegan.py --dataset_path %s/monet2photo --decay_epoch 0", "cyclegan", "--n_steps", true, false)
	return ts
}
