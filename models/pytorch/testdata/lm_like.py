#!/usr/bin/env python3
"""A word-language-model script as pytorch/examples' word_language_model/
main.py is written, with only torch and no download: a corpus of token ids
is generated locally, batchified by hand (no DataLoader), and an LSTM is
trained with truncated backpropagation; it logs every --log-interval batches
in the example's format and evaluates at each epoch's end. It follows no
synergy contract and writes no metrics stream.

  lm_like.py [--batch_size N] [--bptt N] [--epochs N] [--tokens N] [--log-interval N]
"""

import argparse
import math
import time

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return nn.functional.log_softmax(self.decoder(out), dim=-1).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        w = next(self.parameters())
        return (w.new_zeros(self.nlayers, bsz, self.nhid), w.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[:nbatch * bsz].view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def repackage(h):
    return tuple(v.detach() for v in h)


def main():
    p = argparse.ArgumentParser(description="word LM-like")
    p.add_argument("--emsize", type=int, default=200)
    p.add_argument("--nhid", type=int, default=200)
    p.add_argument("--nlayers", type=int, default=2)
    p.add_argument("--lr", type=float, default=20)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--batch_size", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--tokens", type=int, default=200000)
    p.add_argument("--vocab", type=int, default=2000)
    p.add_argument("--log-interval", type=int, default=20)
    p.add_argument("--seed", type=int, default=1111)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(3)
    corpus = torch.multinomial(1.0 / torch.arange(1, args.vocab + 1).float(), args.tokens, replacement=True, generator=g)
    n = len(corpus)
    train_data = batchify(corpus[:n * 8 // 10], args.batch_size)
    val_data = batchify(corpus[n * 8 // 10:], 10)
    model = RNNModel(args.vocab, args.emsize, args.nhid, args.nlayers)
    criterion = nn.NLLLoss()
    lr = args.lr
    for epoch in range(1, args.epochs + 1):
        model.train()
        total_loss, start = 0.0, time.time()
        hidden = model.init_hidden(args.batch_size)
        nb = (len(train_data) - 1) // args.bptt
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i, args.bptt)
            model.zero_grad()
            hidden = repackage(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for q in model.parameters():
                q.data.add_(q.grad, alpha=-lr)
            total_loss += loss.item()
            if batch % args.log_interval == 0 and batch > 0:
                cur = total_loss / args.log_interval
                ms = (time.time() - start) * 1000 / args.log_interval
                print("| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | loss {:5.2f} | ppl {:8.2f}".format(
                    epoch, batch, nb, lr, ms, cur, math.exp(min(cur, 50))), flush=True)
                total_loss, start = 0.0, time.time()
        model.eval()
        with torch.no_grad():
            h, tot = model.init_hidden(10), 0.0
            for i in range(0, val_data.size(0) - 1, args.bptt):
                data, targets = get_batch(val_data, i, args.bptt)
                output, h = model(data, h)
                tot += len(data) * criterion(output, targets).item()
        print("| end of epoch {:3d} | valid loss {:5.2f}".format(epoch, tot / (len(val_data) - 1)), flush=True)


if __name__ == "__main__":
    main()
